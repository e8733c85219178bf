// The tree network: routers, network interfaces, links and credits as timestamped events on a
// cycle calendar, wrapped in one SystemC module.
//
// The calendar holds flit arrivals, credit returns, ejections and client timers, each at a
// router-clock cycle. The SystemC process wakes only at cycles that have events or routers
// holding flits; a quiet network costs nothing. Clients (workloads, later the MBP) inject
// packets and receive deliveries and acknowledgements through NetClient.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <systemc>

#include "models/core/footprint.h"
#include "models/core/stats.h"
#include "models/net/net_config.h"
#include "models/net/packet.h"
#include "models/net/router.h"
#include "models/net/topology.h"

namespace mbpsim::net {

class NetClient {
 public:
  virtual ~NetClient() = default;
  // A timer set with Network::set_timer fires.
  virtual void on_timer(uint32_t node, uint64_t tag, uint64_t now) {}
  // The tail of a unicast or multicast packet reached `node`. For a multicast that asked for
  // acknowledgements the client must answer with Network::send_ack (now or later).
  virtual void on_packet(uint32_t node, Packet& p, uint64_t now) = 0;
  // An acknowledgement (combined, or one end-to-end ack) reached the multicast's source.
  virtual void on_ack(uint32_t node, const Packet& ack, uint64_t now) {}
  // True when the callbacks above read the time only as the network gives it (their `now`,
  // Network::now()) and touch no SystemC clock, event or process: the network may then run
  // them ahead of SystemC's time (network.run_ahead). A client that asks sc_time_stamp() (the
  // MBP's calendar does) must say false.
  virtual bool runs_on_network_time() const { return false; }
  // True when nothing the client computes depends on the order in which one cycle's deliveries,
  // acknowledgements and timers of different nodes reach its callbacks (a node gets its own in
  // time order whatever happens: it has one ejection link). The network may then take express
  // hops (network.express_hops), which move a flit's events within their cycles, never to
  // another cycle. The MBP's callbacks schedule into one calendar whose ties follow call
  // order: false.
  virtual bool order_free() const { return false; }
  // Whether the client may send multicasts that ask for acknowledgements. With combining, the
  // network itself then depends on that order: acknowledgements of two transactions that a
  // router completes in one cycle queue at its generator in the order they arrived. So express
  // hops need either no combining or no such multicasts.
  virtual bool sends_acked_multicasts() const { return true; }
};

enum class EvType : uint8_t { FlitArrive, Eject, Timer };

struct Event {
  EvType type;
  uint8_t port;
  uint8_t vc;
  uint16_t idx;
  uint32_t target;  // router or node
  Packet* pkt;      // flit events; null for timers
  uint64_t tag;     // Timer: the client's tag
};

// Per-node network interface: source queues per message class, wormhole injection with
// credits into the leaf router.
struct NetIface {
  std::deque<Packet*> q[kNumClasses];
  Packet* cur = nullptr;  // packet being injected
  uint16_t next_flit = 0;
  int cur_vc = -1;
  std::vector<int> credits;  // per VC of the leaf router's input port
  CreditLine returning;
  uint8_t cls_rr = 0;
  uint8_t leaf_port = 0;  // this node's input port at its leaf router
  uint32_t leaf = 0;      // the leaf router's id
  uint64_t free_at = 0;
  bool active = false;
};

class Network : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Network);
  // Its statistics, and its routers' (router_<height>_<position>, child modules), are under
  // its own name: system.net when the runner builds it in the root.
  Network(sc_core::sc_module_name name, const NetConfig& cfg, Stats& stats);
  ~Network() override;
  // Adds the host memory a network of `cfg` holds to `f` (routers, network interfaces, the
  // calendar), before one is built.
  static void footprint(const NetConfig& cfg, MemoryForecast& f);
  void set_client(NetClient* c) { client_ = c; }

  const NetConfig& config() const { return cfg_; }
  const TreeTopology& topology() const { return topo_; }
  uint64_t now() const { return now_; }
  sc_core::sc_time period() const { return period_; }

  Packet* new_packet() { return pool_.get(); }
  // Queues a packet at its source NI; create_cycle is stamped here.
  void inject(Packet* p);
  // Multicast helper: builds the bitmap from the destinations and injects.
  void inject_multicast(Packet* p, const std::vector<uint32_t>& dests);
  // Answer to an ack-requesting multicast received at `node`.
  void send_ack(uint32_t node, const Packet& mcast, bool held_copy);
  // A multicast reached a node that holds no copy: the node drops it (counted).
  void note_no_copy() { dropped_no_copy->inc(); }
  void release(Packet* p) { pool_.put(p); }
  void set_timer(uint32_t node, uint64_t at_cycle, uint64_t tag);

  // Packets created but not yet fully delivered (multicasts count once).
  uint64_t in_flight() const { return in_flight_; }
  uint64_t measured_in_flight() const { return measured_in_flight_; }
  void set_measuring(bool m) { measuring_ = m; }
  bool measuring() const { return measuring_; }
  // Packets of class `cls` waiting in a node's source queue, not yet started into the network.
  size_t source_queued(uint32_t node, int cls) const { return nis_[node].q[cls].size(); }
  // Oldest in-flight packets, for failure dumps.
  std::string dump_in_flight(size_t max) const;

  // Engine interface (used by the router and by tests).
  void schedule(uint64_t at, const Event& e);
  void activate(Router& r) {
    if (!r.active) {
      r.active = true;
      (stepping_ ? next_active_ : active_routers_).push_back(&r);
    }
  }
  // Credit returns: queued at the receiver and absorbed lazily; a sleeping receiver that holds
  // work is woken so that it looks at them.
  void credit_to_router(Router& r, int port, int vc, uint64_t at) {
    r.credit(port, vc, at);
    if (r.holds_flits()) activate(r);
  }
  Router& router(int id) { return *routers_[id]; }
  void credit_to_ni(uint32_t node, int vc, uint64_t at);
  void activate_ni(uint32_t node);
  // Runs every event and router step of cycle `now`; returns the next busy cycle or UINT64_MAX.
  uint64_t run_cycle(uint64_t now);
  uint64_t events_processed() const { return events_; }
  // Host-side counts for host.json: router cycles stepped, and how many of them took the
  // lone-flit path (network.fast_path). Never in stats.json: they describe the host's work.
  uint64_t router_steps() const { return router_steps_; }
  uint64_t router_lone_steps() const { return lone_steps_; }
  // Host-side count for host.json: router traversals taken as express hops (network.express_hops).
  uint64_t router_express_hops() const { return express_hops_; }
  // The routers count their lone steps and express hops here (beside router_steps_, a line
  // every cycle writes: off the routers' own lines).
  void count_lone_step() { ++lone_steps_; }
  // An express hop crosses at `at`: the pipeline would have kept its router busy until then, so
  // the network runs every cycle until then as it would (what it reads of its own time, now(),
  // the utilisation's epoch and the watchdog's cycles, stays the pipeline's).
  void count_express_hop(uint64_t at) {
    ++express_hops_;
    if (at > express_until_) express_until_ = at;
  }
  // Whether a router may take an express hop now whose flit crosses at cycle `at`: the client is
  // order-free and no timeline is recorded (express_on_), the cycle is inside the runner's slice
  // (the runner may reset the statistics between slices), and no failure can stop the run before
  // it (none has, and the watchdog cannot fire before `at`).
  bool may_express(uint64_t at) const {
    return at <= horizon_ && failure_.empty() && at - 1 - last_progress_ <= cfg_.watchdog_cycles;
  }
  // Packets delivered since the start (never reset): host-speed figures use it.
  uint64_t total_delivered() const { return total_delivered_; }
  // Starts the network process (call once after elaboration).
  void start();
  // The last cycle the current sc_start runs (the runner sets it before each slice): with
  // network.run_ahead and a client that runs on network time, one activation may run the busy
  // cycles up to it while no other SystemC activity is due before them. 0: never run ahead.
  void set_horizon(uint64_t cycle) { horizon_ = cycle; }
  // Host-side count for host.json (never stats.json): cycles run ahead of SystemC's time.
  uint64_t run_ahead_cycles() const { return run_ahead_cycles_; }
  // Measurement epoch for utilisation formulas: call with the stats reset.
  void reset_epoch();
  // A protocol invariant broke: the run stops and fails with exit status 2 and a dump.
  void invariant_failed(const std::string& what);
  // Set when the watchdog fired or an invariant broke (the run is stopped).
  const std::string& failure() const { return failure_; }
  uint32_t covered_count(uint32_t src, const HierBitmap& bm) const;

  // The transaction timeline (models/core/timeline.h), when the run records one: the routers
  // report a head flit's arrival, a packet's departure on an output, and acknowledge combining.
  // (Out of line and cold: a run without a timeline keeps its hot paths as they were.)
  bool tracing() const { return __builtin_expect(trace_ != nullptr, 0); }
  [[gnu::cold, gnu::noinline]] void trace_head(int router, int port, const Packet* p, uint64_t now);
  // `last`: the packet's last branch here (its head's arrival is forgotten).
  [[gnu::cold, gnu::noinline]] void trace_hop(int router, int in_port, int out_port, const Packet* p, uint64_t now, bool last);
  // `gen_port`: the input a combined acknowledgement starts from.
  [[gnu::cold, gnu::noinline]] void trace_combine(int router, int gen_port, const Packet* p, uint32_t acks, uint32_t expected, uint64_t now);

 private:
  struct Trace;  // network.cpp
  std::unique_ptr<Trace> trace_;
  [[gnu::cold, gnu::noinline]] void trace_send(uint32_t node, const Packet* p, uint64_t now);
  [[gnu::cold, gnu::noinline]] void trace_deliver(uint32_t node, const Packet* p, uint64_t now);
  void process_method();
  // kExpress: express hops are on (the cycle's arrivals were counted); a separate copy, so that
  // a run without them (the MBP's) pays nothing for them here.
  template <bool kExpress>
  void handle(const Event& e);
  void ni_step(uint32_t node, uint64_t now);
  void deliver(uint32_t node, Packet* p, uint64_t now);
  void sync_external();

  NetConfig cfg_;
  TreeTopology topo_;
  NetClient* client_ = nullptr;
  sc_core::sc_time period_;
  sc_core::sc_event wake_;
  uint64_t now_ = 0;
  bool in_cycle_ = false;
  bool stepping_ = false;  // in the router/NI phase: wake-ups take effect next cycle
  bool ran_any_ = false;
  uint64_t last_run_ = 0;
  uint64_t epoch_ = 0;
  std::string failure_;

  std::vector<std::unique_ptr<Router>> routers_;
  std::vector<NetIface> nis_;
  std::vector<Router*> active_routers_, next_active_;  // the router itself: no trip through routers_
  std::vector<uint32_t> active_nis_, next_active_nis_;

  // Calendar: a wheel of per-cycle buckets for the near future, a sorted overflow beyond.
  static constexpr uint64_t kWheel = 1024;
  std::vector<std::vector<Event>> wheel_;
  std::multimap<uint64_t, Event> far_;
  uint64_t pending_events_ = 0;
  uint64_t events_ = 0;
  uint64_t total_delivered_ = 0;
  uint64_t router_steps_ = 0;
  uint64_t lone_steps_ = 0, express_hops_ = 0;
  uint64_t express_until_ = 0;  // the last cycle an express hop crosses in (count_express_hop)
  bool express_on_ = false;  // network.express_hops, an order-free client, no timeline
  uint64_t horizon_ = 0;            // set_horizon
  uint64_t run_ahead_cycles_ = 0;   // run_ahead_cycles
  bool running_ahead_ = false;      // in a cycle run ahead of SystemC's time
  bool stop_due_ = false;           // a run-ahead cycle failed: sc_stop at its own time
  void fail_stop();                 // sc_stop now, or at the failing cycle's time when run ahead

  PacketPool pool_;
  uint64_t next_id_ = 1;
  uint64_t in_flight_ = 0, measured_in_flight_ = 0;
  bool measuring_ = false;
  uint64_t last_progress_ = 0;
  // Receivers whose acknowledgement the source still awaits, per multicast transaction.
  struct OpenTxn {
    uint32_t remaining, src;
    uint64_t create;
  };
  std::unordered_map<uint64_t, OpenTxn> acks_expected_;

 public:
  // Stats (public so the workload can read headline figures).
  Histogram* lat_unicast;
  Histogram* lat_multicast;  // creation to the last receiver's delivery
  Histogram* lat_ack;        // creation to the (last) acknowledgement at the source
  Counter* pkts_injected;
  Counter* flits_injected;
  Counter* pkts_delivered;    // unicast packets, and multicast copies, reaching a node
  Counter* flits_delivered;
  Counter* mcast_sent;
  Counter* mcast_deliveries;
  Counter* mcast_completed;
  Counter* acks_at_source;
  Counter* dummy_acks;
  Counter* dropped_no_copy;
  Counter* acks_sent;
};

}  // namespace mbpsim::net
