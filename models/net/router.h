// Input-queued virtual-channel router of the k-ary tree (Dally & Towles ch. 16; the router
// BookSim2 models): per-VC input buffers with credit flow control, route computation
// (nearest common ancestor for unicast, the hierarchical bitmap for multicast), separable
// input-first VC and switch allocation with round-robin arbiters, crossbar replication of
// multicast flits, and the acknowledge-combining table of Figure 2.8.
//
// A router is plain C++ stepped by the Network only in cycles when it holds flits; it costs
// nothing while idle.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "models/core/ring.h"
#include "models/core/stats.h"
#include "models/net/net_config.h"
#include "models/net/packet.h"

namespace mbpsim::net {

class Network;

struct Flit {
  Packet* pkt;
  uint64_t ready;  // first cycle the flit may take part in switch allocation
  uint16_t idx;    // 0 = head; size_flits-1 = tail
};

// FIFO of flits on a power-of-two ring that lives in its router's one slab of flit buffers
// (no allocation per virtual channel). Credits bound a router input to the buffer depth; only
// the combining-ack generator's queue can outgrow its slot, and then moves to a heap array of
// its own. 24 bytes, so that it and the rest of its input VC share one host cache line.
class FlitQueue {
 public:
  FlitQueue() = default;
  FlitQueue(const FlitQueue&) = delete;
  FlitQueue& operator=(const FlitQueue&) = delete;
  FlitQueue(FlitQueue&& o) noexcept : buf_(o.buf_), mask_(o.mask_), head_(o.head_), n_(o.n_), owned_(o.owned_) {
    o.buf_ = nullptr;
    o.owned_ = false;
  }
  ~FlitQueue() {
    if (owned_) delete[] buf_;
  }
  void attach(Flit* slot, uint32_t cap) {
    buf_ = slot;
    mask_ = cap - 1;
  }
  static uint32_t capacity_for(uint32_t n) {
    uint32_t c = 1;
    while (c < n) c <<= 1;
    return c;
  }
  bool empty() const { return n_ == 0; }
  size_t size() const { return n_; }
  Flit& front() { return buf_[head_]; }
  const Flit& front() const { return buf_[head_]; }
  void pop() {
    head_ = (head_ + 1) & mask_;
    --n_;
  }
  void push(const Flit& f) {
    if (n_ == mask_ + 1) grow();
    buf_[(head_ + n_) & mask_] = f;
    ++n_;
  }

 private:
  void grow() {
    Flit* nb = new Flit[2 * (mask_ + 1)];
    for (uint32_t i = 0; i < n_; ++i) nb[i] = buf_[(head_ + i) & mask_];
    if (owned_) delete[] buf_;
    buf_ = nb;
    owned_ = true;  // after growing past the slot
    mask_ = 2 * mask_ + 1;
    head_ = 0;
  }
  Flit* buf_ = nullptr;
  uint32_t mask_ = 0, head_ = 0, n_ = 0;
  bool owned_ = false;
};

// Credits on their way back to an upstream output port, in the order they were sent (the
// credit delay is constant, so arrival times are non-decreasing). They are absorbed when the
// upstream next looks at its credits: no calendar event per credit. A busy upstream absorbs
// them every cycle, so the line holds about a credit delay's worth; one that sleeps lets them
// pile up to its VCs' buffers, and the ring grows then (start-up memory is what is used).
class CreditLine {
 public:
  static constexpr size_t kInitial = 8;
  void init() { q_.init(kInitial); }
  static uint64_t bytes(size_t cap);
  bool empty() const { return q_.empty(); }
  void push(uint64_t at, int vc) { q_.push(Entry{at, static_cast<uint8_t>(vc)}); }
  // Calls credit(vc) for every credit that has arrived by `now`; returns the VCs that got one.
  template <class F>
  uint32_t absorb(uint64_t now, F credit) {
    uint32_t got = 0;
    while (!q_.empty() && q_.front().at <= now) {
      credit(q_.front().vc);
      got |= 1u << q_.front().vc;
      q_.pop();
    }
    return got;
  }
  uint32_t absorb(uint64_t now, std::vector<int>& credits) {
    return absorb(now, [&](int vc) { ++credits[vc]; });
  }

 private:
  struct Entry {
    uint64_t at;
    uint8_t vc;
  };
  Ring<Entry> q_;
};

// The round-robin pointer after i among n (no division in the arbiters' loops).
constexpr int rr_next(int i, int n) { return i + 1 == n ? 0 : i + 1; }

constexpr int kMaxPorts = kMaxRadix + 2;  // children, parent, combining-ack generator

// One input VC in one host cache line (64 bytes, aligned): a hop reads its queue, its route and
// its output VCs together.
struct alignas(64) InputVC {
  FlitQueue q;
  // The cycle from which the VCs the packet at the front holds may be used: one for all its
  // outputs, since a packet takes its VCs on every output in the same cycle or on none.
  uint64_t va_ready = 0;
  uint32_t route_mask = 0;    // output ports of the packet at the front
  uint32_t pending = 0;       // outputs the front flit still has to reach
  bool routed = false;        // the packet at the front has its route
  int8_t out_vc[kMaxPorts];   // VC held at each output port, -1 none
};
static_assert(sizeof(InputVC) == 64, "an input VC is one host cache line");

class Router;

// One output port in one host cache line (64 bytes, aligned): a hop's switch request, its
// send and the credits coming back read these fields together.
struct alignas(64) OutputPort {
  // Per VC of this output, in the router's slab (one record per VC: a hop reads them together).
  struct Vc {
    int16_t credits;  // free slots downstream
    int16_t holder;   // input (port * 32 + vc) holding the VC, -1 none
    uint8_t busy;     // held by a packet
  };
  Vc* vc = nullptr;
  Router* peer_router = nullptr;  // the router at the other end (null: a node)
  uint64_t free_at = 0;           // link serialisation
  Counter* flits = nullptr;
  CreditLine returning;           // credits sent back by the downstream, not yet absorbed
  uint32_t peer = 0;              // router id or node id
  bool to_node = false;           // ejection link to a node (infinite sink)
  uint8_t peer_port = 0;
  uint8_t va_rr = 0;
  uint8_t sa_rr = 0;
};
static_assert(sizeof(OutputPort) == 64, "an output port is one host cache line");

// One multicast this router forwarded: the receivers its branches cover, and what the acks
// that came back so far stand for. Counting receivers (not branches) lets acks that passed a
// router without an entry (table full) still be merged correctly further up.
struct CombineEntry {
  uint64_t txn;
  uint32_t expected;
  uint32_t acks, held;
};

// A router of the tree: a module of the network (system.net.router_<height>_<position>), its
// statistics under its own name.
class Router final : public sc_core::sc_module {
 public:
  Router(sc_core::sc_module_name name, Network& net, int id, int height, uint32_t pos, Stats& stats);
  // Host memory a router holds under `c`, its statistics included (a root has no parent
  // port; `name_len`: its hierarchical name's length): what the constructor allocates, with a
  // combining table grown to its bound.
  static uint64_t footprint_bytes(const NetConfig& c, bool has_parent, size_t name_len);
  // Links each port to the router at its other end (once every router of the network exists).
  void connect();
  // A flit arrives at an input VC (called by the network at the arrival cycle).
  void accept(int port, int vc, Packet* p, uint16_t idx, uint64_t now);
  // The express hop (network.express_hops; the network asks only when it allows one, see
  // Network::may_express): a one-flit unicast (or an uncombined ack) that is the only flit to
  // arrive here this cycle, at a router that holds no flit and no output VC, will take the first
  // VC of its class and cross the switch in the first cycle it may, `routing_delay + va_delay`
  // later, for certain when its output's link is free by then and the VC has a credit now
  // (credits only grow, but by this router's own sends): no other packet can ask for that
  // output by then (one that arrives later gets its VCs later, and asks later still). It crosses
  // now, stamped with that cycle: the same VC, arbiter pointers, arrival downstream and credit
  // upstream as the pipeline's, and the router neither stores the flit nor wakes for it. What
  // other packets could see before that cycle stays the pipeline's: its output VC is held until
  // the switch allocation of that cycle (release_ahead), and a flit that arrives on its input VC
  // first reaches the front only then (hold_behind_express). Returns false, changing nothing anyone sees,
  // when it cannot; the flit is then accepted as usual.
  bool express(int port, int vc, Packet* p, uint16_t idx, uint64_t now);
  // After accept() of a flit at input VC (port, vc): behind an express packet of that VC that
  // has not crossed yet, a head reaches the front in the cycle it crosses, too late for that
  // cycle's VC allocation. (Only arrivals can follow an express packet on its VC: the combining
  // generator's input takes no express hop.)
  void hold_behind_express(int port, int vc) {
    if (ahead_at_ && port == ahead_in_port_ && vc == ahead_in_vc_) {
      FlitQueue& q = this->vc(port, vc).q;  // (empty: the flit was an acknowledgement combined here)
      if (q.size() == 1 && q.front().ready <= ahead_at_) q.front().ready = ahead_at_ + 1;
    }
  }
  // Arrivals at this router in the cycle being handled (the network counts them before it
  // handles the cycle's events, so that a packet knows whether it arrives alone); read once.
  void count_arrival() { arrivals_ += arrivals_ < 255; }
  uint8_t take_arrivals() {
    const uint8_t n = arrivals_;
    arrivals_ = 0;
    return n;
  }
  // The downstream of output `port` freed a slot of `vc`; the credit arrives at cycle `at`.
  void credit(int port, int vc, uint64_t at) {
    out_[port].returning.push(at, vc);
    returning_mask_ |= 1u << port;
  }
  // One cycle of allocation and switching; returns true while it still holds flits.
  bool step(uint64_t now);
  bool holds_flits() const { return flits_held_ > 0; }
  // Holds flits, or an express packet that crosses after cycle `now` (failure dumps).
  bool holds_packets(uint64_t now) const { return flits_held_ > 0 || ahead_at_ > now; }
  int id() const { return id_; }
  int height() const { return height_; }
  int nports() const { return nports_; }
  OutputPort& out(int p) { return out_[p]; }
  std::string describe_flits() const;

 private:
  void route(InputVC& vc, int in_port, Packet* p);
  // The output towards node `dst` (nearest-common-ancestor routing).
  uint32_t unicast_route(uint32_t dst) const {
    if (dst - first_node_ < span_) {  // below this router (unsigned: one compare)
      const uint32_t off = dst - first_node_;
      return 1u << (child_shift_ >= 0 ? off >> child_shift_ : off / child_span_);
    }
    return 1u << k_;
  }
  // The three stages of one input VC's turn in a cycle, shared by the general step and the
  // lone-flit path (one meaning, one place):
  // VC allocation, after route computation for a head not yet routed. Sets `progress` when it
  // routed or allocated, `timed_wait` when the head is not ready yet.
  // Returns true when it allocated VCs in this cycle (the flit cannot request the switch
  // before va_delay has passed, at least a cycle).
  bool allocate_vcs(int p, int v, uint64_t now, bool& progress, bool& timed_wait);
  // The outputs the VC's front flit may request in switch allocation this cycle (it parks a
  // packet whose one output has no credit).
  uint32_t requests(int p, int v, uint64_t now, bool& timed_wait);
  // The front flit crosses the switch to the granted outputs; once it has reached every
  // output it needed, its slot frees and the upstream gets the credit.
  void forward(int p, int v, uint32_t grant, uint64_t now);
  // The fast path: a router holding a single flit has nothing to arbitrate, so its cycle is
  // that flit's turn alone, without scanning ports and VCs (same state changes, same order).
  // `release_due`: an express packet crosses in this cycle's switch allocation.
  bool step_lone(uint64_t now, bool release_due, bool& progress, bool& timed_wait);
  // The switch allocation of a lone requester: each output it asks for grants it.
  void grant_lone(int p, uint32_t grant);
  // Frees the output VC an express packet held, as its crossing would have.
  void release_ahead();
  // Frees output VC `vc` of port `o` (a tail crossed): heads that found no VC may try again.
  void release_vc(int o, int vc);
  // A flit crosses to output `o` on its VC `vc` at `now`: the link, the port's count, the
  // arrival downstream (or the delivery) and the downstream buffer's credit.
  void cross(int o, int vc, Packet* pkt, uint16_t idx, bool tail, uint64_t now);
  // After a cycle's allocation: whether the router stays awake (see step()).
  bool stay_awake(uint64_t now, bool progress, bool timed_wait);
  // Merges an ack into this router's entry for its transaction; false when there is none.
  bool consume_ack(Packet* p, uint64_t now);
  void send(int in_port, InputVC& vc, int out_port, uint64_t now);
  void push_flit(int port, int vc, const Flit& f);
  // Absorbs the credits that have arrived at output o and unblocks the VCs waiting for them.
  void absorb_credits(int o, uint64_t now);
  // Credit for a slot freed at input port p goes to whoever feeds that port.
  void return_credit(int p, int vc, uint64_t now);

  // Per input port: its VCs' work lists as bitmasks, so a saturated router does not scan
  // every VC, and its switch-allocation round robin (one array, one record per port).
  struct InPort {
    uint32_t nonempty = 0;        // VCs holding flits
    uint32_t va_pending = 0;      // a head at the front still needs route or VCs
    uint32_t va_blocked = 0;      // ... and its last attempt found no free VC; retried only
                                  // after a VC is released
    uint32_t credit_blocked = 0;  // its one output has no credit; cleared by a credit
    uint8_t rr = 0;               // switch-allocation round robin over its VCs
  };

  // What a hop reads of the router itself, in two host cache lines (the SystemC module before
  // them is cold): first the state a cycle's step looks at (the arrays, sized by the ports and
  // VCs: input VCs [port * nvcs + vc] with their output VCs, input ports, output ports), then
  // the hop's parameters.
  alignas(64) Network* net_ = nullptr;
  std::unique_ptr<InputVC[]> in_;
  std::unique_ptr<InPort[]> inp_;
  std::unique_ptr<OutputPort[]> out_;
  uint32_t flits_held_ = 0;
  uint32_t port_mask_ = 0;       // input ports with a non-zero nonempty
  uint32_t returning_mask_ = 0;  // output ports with credits on their way back
  int nvcs_ = 0;
  int ninputs_ = 0;  // input ports: children + parent + generator

 public:
  bool active = false;  // in the network's list of routers to step

 private:
  bool any_va_blocked_ = false;
  bool fast_path_ = true;  // network.fast_path
  uint8_t arrivals_ = 0;   // count_arrival()
  // The express packet whose output VC is still held: the cycle it crosses (0: none). Its
  // output port and VC, input port and VC are in the next line (read only when there is one).
  uint64_t ahead_at_ = 0;
  // The timing parameters a hop reads, from the network's config (network.*).
  alignas(64) uint32_t routing_delay_ = 0;
  uint32_t va_delay_ = 0, hop_delay_ = 0, flit_cycles_ = 0, credit_delay_ = 0;
  int vpc_ = 0;  // VCs per message class
  // Unicast route computation without division: the nodes below this router are
  // [first_node_, first_node_ + span_), those below child c start at c * child_span_.
  uint32_t first_node_ = 0, span_ = 0, child_span_ = 1;
  int child_shift_ = -1;  // log2(child_span_) when it is a power of two
  int k_ = 0;
  int gen_port_ = 0;  // index of the generator input (combined acks)
  int nports_ = 0;    // output ports: children + parent
  int id_ = 0;
  uint8_t ahead_out_ = 0, ahead_vc_ = 0, ahead_in_port_ = 0, ahead_in_vc_ = 0;
  uint16_t out_vcs_held_ = 0;  // output VCs held by packets in this router (or an express one)

  int height_ = 0;
  uint32_t pos_ = 0;
  const Packet* ahead_pkt_ = nullptr;  // the express packet (failure dumps only)
  std::unique_ptr<Flit[]> flit_slab_;
  std::unique_ptr<OutputPort::Vc[]> out_slab_;  // the output ports' VCs ([port * nvcs + vc])
  InputVC& vc(int port, int v) { return in_[static_cast<size_t>(port) * nvcs_ + v]; }
  const InputVC& vc(int port, int v) const { return in_[static_cast<size_t>(port) * nvcs_ + v]; }
  std::vector<CombineEntry> table_;

  Counter* comb_alloc_ = nullptr;
  Counter* comb_bypassed_ = nullptr;
  Counter* acks_combined_ = nullptr;
  Counter* acks_in_ = nullptr;
  Average* comb_occupancy_ = nullptr;
};

}  // namespace mbpsim::net
