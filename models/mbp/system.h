// The MBP machine of thesis chapter 2 as one SystemC module: per node, processors with P-TLBs
// and L1/L2 caches on a snooping node bus, memory banks that are main memory for home pages
// and the L3 cache of remote pages (block state tags), and the MBP with its C-TLB and N-TLB;
// per home page, the pseudo-fullmap directory; between nodes, the tree network.
//
// Timing. Processors are loosely timed: a processor runs ahead of global time by up to
// node.quantum_ns while it hits in its caches or its node, charging latencies to its own
// clock; shared resources (bus address and data phases, banks, MBP engines) are "busy until"
// timestamps. Whatever leaves the node, or needs the MBP, waits until global time reaches
// the processor's clock, then becomes a timestamped event. Events live in one calendar (a
// binary heap) run by one SC_METHOD; nothing runs while nothing is due.
//
// Data. Memory frames, the L3 copies and every L1/L2 line hold real bytes; loads return them.
// Each node's memory banks are TLM-2.0 targets (mem::Memory by default), one initiator socket
// of the node bus per bank; a frame's bytes are taken from its banks through DMI when the frame
// is allocated (the bus interleaves a page over the banks), and any TLM-2.0 LT memory that
// grants DMI can replace a bank (use_bank).
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <queue>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <systemc>

#include "models/core/event_queue.h"
#include "models/core/footprint.h"
#include "models/core/sim_time.h"
#include "models/core/rng.h"
#include "models/core/stats.h"
#include "models/mem/memory.h"
#include "models/mbp/directory.h"
#include "models/mbp/mbp_config.h"
#include "models/mbp/node_bus.h"
#include "models/mbp/proc_port.h"
#include "models/mbp/protocol.h"
#include "models/net/network.h"
#include "models/node/cache.h"
#include "models/node/memop.h"
#include "models/node/node_config.h"

namespace mbpsim {
class Timeline;
}

namespace mbpsim::mbp {

struct BusMaster;
using node::MemOp;
using node::OpKind;
using node::Protocol;

// Thrown by an undefined transition to leave the controller; the run stops with exit status 2.
struct ProtocolFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class System : public sc_core::sc_module, public net::NetClient {
  friend struct SystemTestPeer;  // white-box tests: inject messages, corrupt copies

 public:
  SC_HAS_PROCESS(System);
  System(sc_core::sc_module_name name, const node::NodeConfig& nc, const MbpConfig& mc,
         net::Network& net, Stats& stats, uint64_t seed);
  ~System() override;
  // Adds the host memory a machine of `nodes` nodes holds to `f` before one is built: its
  // processors with their caches, its nodes, and the pages and directory entries the addresses
  // `use` make (models/core/footprint.h).
  static void footprint(const node::NodeConfig& nc, const MbpConfig& mc, uint64_t nodes, const AddressUse& use, MemoryForecast& f);
  // The workload's driver gives every processor its operations, but those with a port.
  void set_driver(node::ProcDriver* d);
  // A processor's driver (to wrap it: a decorator passes each op through and sees it).
  node::ProcDriver* driver(uint32_t node, uint32_t proc) const;
  // A user's TLM-2.0 memory in place of bank `bank` of node `node` (before elaboration ends).
  // The bus addresses a bank with its own offsets: bank-local address = (p / (u * banks)) * u +
  // p % u for node-physical address p, u = max(node.bank_interleave_bytes, node.block_bytes)
  // (a block never straddles two banks). The memory must grant read/write DMI over each
  // frame's share (page_bytes / banks bytes, or u when a page spans fewer banks) and must not
  // revoke it; a read latency it states with the DMI replaces node.bank_latency_ns for it.
  void use_bank(uint32_t node, uint32_t bank, mem::TargetSocket& m);
  // The bank as the node bus sees it: the node's own, or the user's in its place.
  mem::TargetSocket& bank(uint32_t node, uint32_t bank);
  // Processor `proc` of node `node` takes its operations from a TLM-2.0 target socket instead of
  // the workload (proc_port.h: a user's core model binds its initiator to it), before
  // elaboration ends. The port is the module system.node<n>.proc<i>.port. Throws
  // std::logic_error when asked for a new port after elaboration, std::out_of_range for a
  // processor the machine lacks; afterwards it returns the port made.
  ProcPort& processor_port(uint32_t node, uint32_t proc);
  // A user's TLM-2.0 module between processor `proc` of node `node` and its node bus (node_bus.h:
  // the transactions and their BusOp extension), before elaboration ends: the processor's
  // initiator socket (system.node<n>.proc<i>.bus) is bound to `first`, and the user binds their
  // module's initiator to bus_socket(node). The module must pass every transaction on without
  // waiting. Throws std::logic_error after elaboration, std::out_of_range for a processor the
  // machine lacks.
  void use_bus_path(uint32_t node, uint32_t proc, mem::TargetSocket& first);
  // The node bus's target socket (system.node<n>.bus.socket): the processors bind to it, and so
  // may a user's module (any number of initiators).
  mem::TargetSocket& bus_socket(uint32_t node);
  // Starts every processor (call after elaboration, before sc_start runs the workload).
  void start();
  // The driver has work for a sleeping processor.
  void wake(uint32_t node, uint32_t proc);
  // The same at a later simulated time (picoseconds).
  void wake_at(uint32_t node, uint32_t proc, uint64_t t_ps) { schedule(t_ps, kWake, node, proc, nullptr); }
  // Round deliveries (invalidations, updates, page invalidations) a node received.
  uint64_t round_deliveries(uint32_t node) const;

  uint32_t nodes() const { return nodes_; }
  uint32_t procs() const { return static_cast<uint32_t>(nc_.procs); }
  const node::NodeConfig& node_config() const { return nc_; }
  const MbpConfig& mbp_config() const { return mc_; }
  uint64_t now_ps() const { return sim_now_ps(); }
  // Home node of a network page (decided on first touch by the placement policy).
  uint32_t home_of(uint64_t page);
  // Pages touched so far (each has its home), and the entries of node `node`'s directory
  // (system.node<n>.mbp.dir): one per page the node is the home of.
  uint64_t pages_placed() const { return home_.size(); }
  uint64_t directory_entries(uint32_t node) const;
  // Protocol and directory format of a page (authoritative: the home's directory entry).
  Protocol protocol_of(uint64_t page);
  DirFormat format_of(uint64_t page);
  // Node-physical address of a network address at a node, or ~0 when the node has no frame
  // for the page (two-stage translation, Fig. 2.4).
  uint64_t node_physical(uint32_t node, uint64_t addr) const;
  // A copy of the home memory's bytes of a block (for drivers' end checks).
  void read_home(uint64_t addr, uint8_t* out, uint32_t size);

  // Headline figures for a workload's summary: hit rates per level, coherence traffic.
  nlohmann::ordered_json summary_figures() const;
  const std::string& failure() const { return failure_; }
  std::string dump_outstanding(size_t max) const;
  uint64_t ops_completed() const { return ops_completed_; }
  // Nothing scheduled: no processor will run and no message will be handled until woken.
  bool quiet() const { return cal_.empty(); }
  uint64_t events() const { return events_; }
  // Ops whose blocks the processors prefetched on their driver's hint (MemOp::ahead): a host
  // figure that shows the hint is taken, never in stats.json.
  uint64_t prefetched() const { return prefetched_; }

  // NetClient
  void on_packet(uint32_t node, net::Packet& p, uint64_t now) override;
  void on_ack(uint32_t node, const net::Packet& ack, uint64_t now) override;

 private:
  struct Frame;
  struct NodeBus;
  struct DirPage;
  struct Directory;
  struct NodeMbp;
  struct Proc;
  struct Round;
  struct Node;
  enum EvKind : uint8_t { kProcResume, kHandle, kHandleMc, kSend, kWake, kWatchdog };
  // One calendar entry, typed by its kind: `arg` is the processor (ProcResume, Wake) or the
  // multicast delivery's packet slot (HandleMc, in mc_pkts_); `msg` the message (Handle,
  // HandleMc, Send). Its time and order are the queue's (models/core/event_queue.h).
  struct Ev {
    EvKind kind;
    uint32_t node, arg;
    Msg* msg;
  };
  enum class Outcome { Done, Sync, Wait };

  void before_end_of_elaboration() override;

  // Event engine.
  void process();
  void schedule(uint64_t t, EvKind kind, uint32_t node, uint32_t arg = 0, Msg* msg = nullptr);

  // Processors.
  void run_proc(Proc& p, uint64_t now);
  void prefetch_hinted(Proc& p);
  Outcome execute(Proc& p, uint64_t& t, uint64_t now);
  // A shared address: its network page, network block, byte in the block, block in the page.
  struct Addr {
    uint64_t page, nblk;
    uint32_t boff, bi;
  };
  Addr decode(uint64_t addr) const;
  Outcome exec_load(Proc& p, uint64_t& t, uint64_t now);
  Outcome exec_store(Proc& p, uint64_t& t, uint64_t now);
  Outcome exec_wb_store(Proc& p, uint64_t& t, uint64_t now);
  void finish_op(Proc& p, uint64_t t);
  void block_proc(Proc& p, uint64_t now, const char* why);
  void unblock(Proc& p);
  void resume_later(Proc& p, uint64_t t);
  void retry_issuer(Proc& p);
  Frame* translate(Proc& p, uint64_t page, uint64_t& t);
  Frame* frame_for(uint32_t node, uint64_t page, bool create);
  Frame* home_frame(uint64_t page);
  // L3 replacement: frees the least recently used remote page of node n that has no pending
  // request (exclusive blocks are written back). Returns false when none can go.
  bool evict_page(uint32_t n);
  void forward_wb(Proc& p, uint64_t nblk, uint32_t off, uint32_t size, uint8_t* out, bool* any);
  void issue_wb(Proc& p, size_t idx, uint64_t now);
  Msg* proc_request(MsgType t, Proc& p, Frame* f, uint64_t nblk);
  Outcome ask_mbp(Proc& p, Frame* f, uint32_t bi, bool write, uint64_t now);
  void wb_retire(Proc& p, uint64_t id);
  void complete_from_msg(Proc& p, Msg* m);

  // Node bus, banks and caches (node_bus.cpp; the transactions are node_bus.h's).
  // Serves a transaction of node `node`'s bus.
  void bus_transport(uint32_t node, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  // A transaction of node `node`'s bus master m (a processor, the MBP) through its socket, started
  // at time t (on return, the time it completed): a block `data` (Read*: the block arrives
  // there), the Request's message `msg`, a snoop's `flush`. A path that answers with an error
  // fails the run, naming the node, the master and the transaction.
  BusOp::Supplier bus_op(uint32_t node, BusMaster& m, BusOp::Kind k, uint64_t paddr, uint64_t& t, uint8_t* data, Msg* msg = nullptr,
                         bool flush = false);
  // The bank that holds node-physical address p, and p's address inside that bank.
  uint32_t bank_of(uint64_t p) const { return static_cast<uint32_t>((p >> unit_shift_) % nc_.banks); }
  uint64_t bank_local(uint64_t p) const { return (p / (uint64_t{unit_} * nc_.banks)) * unit_ + (p & (unit_ - 1)); }
  // Takes a new frame's bytes from its banks (DMI through the node bus) and zeroes them.
  void attach_memory(Node& n, Frame* f);
  // The node-physical address of block bi of frame f.
  uint64_t paddr_of(const Frame* f, uint32_t bi) const;
  // The bytes of block bi of frame f, in its bank.
  uint8_t* mem(const Frame* f, uint32_t bi) const;
  uint64_t bus_time(Node& n, uint64_t t, bool data, bool from_memory, uint64_t paddr);
  uint64_t bank_access(Node& n, uint64_t t, uint64_t paddr);
  // Snoops the L2s of a node (but `except_proc`'s): an M copy lands in the frame, then every
  // copy is downgraded to S or invalidated. Returns whether some L2 held the block.
  bool snoop(Node& n, int except_proc, Frame* f, uint32_t bi, bool invalidate);
  // The node's MBP snoops its caches through its bus socket (an Invalidate or a Downgrade, with a
  // data phase when `flush` and a cache held the block). Returns whether some L2 held it.
  bool mbp_snoop(Node& nd, Frame* f, uint32_t bi, bool invalidate, bool flush = false);
  // Whether some L2 of the node holds block bi of frame f (the snoop filter).
  bool node_l2_holds(Node& n, Frame* f, uint32_t bi);
  // mbp.check_invariants: the snoop filter names exactly the L2s that hold the block.
  void check_snoop_filter(Node& n, Frame* f, uint32_t bi);
  // The snoop filter's entry of node-physical block pblk.
  uint64_t& l2_holders(Node& n, uint64_t pblk);
  // Processor p's L2 and L1 take the block in L2 state `l2state` at its time t (a modified L2
  // victim is written back through its socket).
  void fill_caches(Proc& p, uint64_t pblk, const uint8_t* data, uint8_t l2state, uint64_t t);

  // MBP: messages.
  Msg* new_msg(MsgType t, uint32_t src, uint32_t dst);
  void free_msg(Msg* m);
  uint32_t flits_of(MsgType t) const;
  void count_msg(const Msg* m);
  void send(Msg* m, uint64_t at);
  uint64_t service(uint32_t node, Msg* m, uint64_t arrive);
  void handle(uint32_t node, Msg* m, const net::Packet* mcast);
  void trace_service(Timeline& tl, uint32_t node, const Msg& m, uint64_t arrive, uint64_t end);
  void handle_msg(uint32_t node, Msg* m, const net::Packet* mcast);
  void ack_round(uint32_t node, Msg* m, const net::Packet* mcast, bool held);

  // Home controller.
  void home_request(uint32_t node, Msg* m);
  void home_dispatch(Frame* f, Msg* m);
  void home_event(Frame* f, uint32_t bi, HEvent e, Msg* data);
  void home_block_idle(Frame* f, uint32_t bi);
  void begin_busy(Frame* f, uint32_t bi, Msg* m);
  Msg* end_busy(Frame* f, uint32_t bi);
  void invalidate_then(Frame* f, uint32_t bi, Msg* m, HState s, HEvent e);
  void home_to(Frame* f, uint32_t bi, HState s, HEvent e, HState to);
  bool perform_write(Frame* f, uint32_t bi, Msg* m);
  bool start_round(Frame* f, uint32_t bi, MsgType kind, Msg* req);
  void round_done(Round* r);
  void home_flush_local(Frame* f, uint32_t bi, bool invalidate);
  void reply(Msg* req, MsgType t, Frame* f, uint32_t bi);
  void start_switch(Frame* f);
  void switch_step_done(Frame* f);

  // Remote controller.
  void remote_request(Proc& p, Frame* f, uint32_t bi, REvent e);
  bool remote_event(uint32_t node, Frame* f, uint32_t bi, REvent e, Msg* m, const net::Packet* mcast,
                    bool ack = true);
  void finish_mshr(uint32_t node, Frame* f, uint32_t bi, const uint8_t* once);

  // Checkers.
  void check_swmr(uint32_t node, int proc, uint64_t nblk);
  void check_value(uint64_t nblk, uint32_t off, uint32_t size, const uint8_t* got, const char* where);
  void golden_write(uint64_t nblk, uint32_t off, uint32_t size, const uint8_t* bytes);
  void check_update_copies(Frame* home, uint32_t bi);
  void check_round_acks(const Round& r);
  bool round_complete(const Round* r) const;
  void fail(const std::string& what);
  [[noreturn]] void undefined(const char* ctrl, uint32_t node, uint64_t nblk, const char* state, const char* event);

  node::NodeConfig nc_;
  MbpConfig mc_;
  net::Network& net_;
  Stats& stats_;
  uint64_t seed_;
  DirectoryFormats dirfmt_;
  uint32_t nodes_;
  uint32_t blocks_per_page_;
  // Address decoding by shifts (block and page sizes are powers of two, checked at load): a
  // division per reference was a few percent of a run of hits.
  uint32_t block_shift_, page_shift_;
  // The compute time before a reference, llround(gap * cpi * cpu period), for the common
  // gaps: the same value as the expression, without a libm call per reference.
  static constexpr uint32_t kGapTable = 256;
  uint64_t gap_ps_[kGapTable];
  uint64_t compute_ps(uint64_t gap) const { return static_cast<uint64_t>(std::llround(static_cast<double>(gap) * nc_.cpi * cpu_ps_)); }
  uint64_t gap_ps(uint64_t gap) const { return gap < kGapTable ? gap_ps_[gap] : compute_ps(gap); }
  uint64_t colors_;
  uint64_t cpu_ps_, bus_ps_, mbp_ps_, net_ps_, quantum_ps_, bank_lat_ps_, bank_busy_ps_;
  uint32_t data_flits_;
  // Bank interleaving: bytes per bank before the next (unit_ = 1 << unit_shift_), banks one page
  // spans (spans_ = 1 << spans_shift_) and the bytes of a page in each of them.
  uint32_t unit_, unit_shift_, spans_, spans_shift_, share_bytes_;

  std::vector<std::unique_ptr<Node>> node_;
  std::unordered_map<uint64_t, uint32_t> home_;       // network page -> home node
  std::unordered_map<uint64_t, Round*> rounds_;       // round id -> round
  uint64_t next_round_ = 1ull << 40;
  uint64_t next_wb_id_ = 1;
  std::vector<Msg*> msg_free_;
  // The network packets of multicast deliveries in flight to their handlers (a slot is free
  // again once handled; the packets stay where they are while others are added).
  std::vector<std::unique_ptr<net::Packet>> mc_pkts_;
  std::vector<uint32_t> mc_free_;
  std::vector<std::unique_ptr<Msg>> msg_all_;
  EventQueue<Ev> cal_;
  sc_core::sc_event wake_;
  bool watchdog_armed_ = false;
  uint64_t waiting_procs_ = 0;
  std::string failure_;
  uint64_t ops_completed_ = 0, events_ = 0, prefetched_ = 0;
  std::unordered_map<uint64_t, std::vector<uint8_t>> golden_;  // checkers: invalidate blocks
  Rng placement_rng_;

 public:
  // Aggregate statistics (per-node ones hang off each node).
  struct Totals {
    Counter *loads, *stores, *atomics, *fences, *switches_requested;
    Counter *msgs[kNumMsgTypes];
    Counter *proto_msgs[3], *proto_actions[3];
    Counter *dir_lookups[3];
    Counter *home_trans[kNumHStates][kNumHEvents];
    Counter *remote_trans[kNumRStates][kNumREvents];
    Counter *rounds_mc, *rounds_uc, *deliveries, *deliveries_no_copy, *acks_held, *combined_acks, *unicast_acks;
    Counter *protocol_switches, *pointer_overflows, *coarsen_deferred, *nacks, *use_once_fills;
    Counter *page_invalidations, *recalls, *checks_swmr, *checks_value, *checks_update, *checks_round_acks, *stale_writebacks;
    Histogram *fanout, *op_latency_remote, *round_latency;
  } st_;
};

}  // namespace mbpsim::mbp
