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
  // The downstream of output `port` freed a slot of `vc`; the credit arrives at cycle `at`.
  void credit(int port, int vc, uint64_t at) {
    out_[port].returning.push(at, vc);
    returning_mask_ |= 1u << port;
  }
  // One cycle of allocation and switching; returns true while it still holds flits.
  bool step(uint64_t now);
  bool holds_flits() const { return flits_held_ > 0; }
  int id() const { return id_; }
  int height() const { return height_; }
  int nports() const { return nports_; }
  OutputPort& out(int p) { return out_[p]; }
  std::string describe_flits() const;
  // Host-side count (host.json, never stats.json): cycles this router took by the lone-flit path.
  uint64_t lone_steps() const { return lone_steps_; }

 private:
  void route(InputVC& vc, int in_port, Packet* p);
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
  bool step_lone(uint64_t now, bool& progress, bool& timed_wait);
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
  uint64_t lone_steps_ = 0;
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

  int height_ = 0;
  uint32_t pos_ = 0;
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
