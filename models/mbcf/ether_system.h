// MBCF/Ether (thesis chapter 6): the MBCF run by host software over a commodity Ethernet.
// Each node is a host CPU (host::Cpu: one processor shared by the user program and the kernel;
// an interrupt delays whatever the user was doing), a NIC behind the `Nic` seam (nic.h; the
// conventional one, conventional_nic.h: descriptor latency, store-and-forward DMA at the bus's
// burst rate, interrupts), a receive ring of kernel buffers, and the kernel's MBCF code: the MBCF-requesting system call, the MBCF receive
// interrupt routine, the Go-back-N protocol of 6.1.4, multicast forwarding with acknowledge
// combining, the page-fault save area and task migration. The command semantics come from
// engine.h; this file decides who pays for them and when, through the node's `Executor`
// (executor.h: the kernel's, EtherSystem::Kernel, unless a factory gives another).
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/core/calendar.h"
#include "models/core/config.h"
#include "models/core/module_tree.h"
#include "models/core/rng.h"
#include "models/core/params.h"
#include "models/core/stats.h"
#include "models/host/cpu.h"
#include "models/host/io_bus.h"
#include "models/host/os.h"
#include "models/mem/memory.h"
#include "models/mbcf/engine.h"
#include "models/mbcf/executor.h"
#include "models/mbcf/gbn.h"
#include "models/mbcf/nic.h"
#include "models/mbcf/packet.h"
#include "models/mbcf/task.h"
#include "models/net/ether.h"

namespace mbpsim::mbcf {

// Host, bus, NIC and protocol parameters. The origin of each value is written next to its
// declaration in ether_params.cpp and next to the values in the configs.
struct EtherSysConfig {
  // Every member is a parameter of `params()` (ether_params.cpp), which gives it its default.
  EtherSysConfig();
  uint32_t nodes{};
  uint32_t page_bytes{};
  // host CPU
  double cpu_mhz{};
  // the MBCF kernel's own costs (its system call and receive routine)
  double syscall_cycles{}, int_packet_cycles{}, int_command_cycles{}, int_struct_cycles{};
  double reply_cycles{}, ack_cycles{}, tx_done_cycles{}, poll_cycles{};
  double atomic_word_cycles{}, user_build_cycles{};
  double timer_read_us{};
  host::OsConfig os;  // the host OS's costs: interrupt entry, light-weight calls, upcalls, copies
  bool user_construction{};  // mbcf.interface = user
  double page_in_us{};
  // 3.4.2's save area in kernel memory: packets held for tasks waiting for a page-in, besides
  // the one that faulted for each task. A packet that would need a full area is not accepted.
  uint32_t save_area{};
  host::BusConfig bus;  // the host I/O bus the NIC's DMA uses
  // NIC
  double nic_tx_latency_ns{}, nic_rx_latency_ns{};
  bool nic_rx_cut_through{};
  bool nic_tx_prefetch{};  // the next frame's descriptor fetch overlaps the DMA of the one before
  // A transmit FIFO smaller than a frame (the LANCE's 48 bytes): the NIC streams a frame from
  // memory as it leaves, so it takes the next frame only once the one before has left the
  // MAC, nic_tx_latency_ns later (its turnaround: descriptor, status and FIFO prefill).
  bool nic_tx_streams{};
  uint32_t rx_ring{};
  // Go-back-N
  uint32_t th1{}, th2{}, th1_min{}, tx_buffers{};
  double ack_timeout_us{}, resend_timeout_us{};
  uint32_t max_timeouts{};  // then the peer is probed with exponential back-off
  double max_backoff_us{};
  // The network stuck check: a pair with packets unacknowledged and no acknowledgement progress
  // for this long stops the run (exit 2) with the oldest packets dumped; 0: never.
  double stuck_us{};
  net::EtherConfig ether;
  static const ParamTable<EtherSysConfig>& params();
  static EtherSysConfig from(const Config& c);  // params() loaded, then cross-checked
  // Go-back-N's parameters (mbcf.th1 ... mbcf.max_backoff_us), for any host that runs it (the
  // kernel, the MBP2's firmware, a user-level library over UDP); nodes and self are the host's.
  gbn::Params gbn_params() const;
};
void declare_mbcf_params(ParamSchema& s);

// The cluster's MBCF protocol: a module (system.mbcf under the runner's root), the sibling of
// the hosts it builds (system.host<n>) and of the segment (system.ether). Its statistics, the
// protocol's over every node, are under its name.
class EtherSystem : public sc_core::sc_module {
 public:
  // Makes node `node`'s NIC, whose port on the Ethernet `wire` is station `node` (null: the
  // conventional NIC the `nic.*` parameters describe). The wire hands received frames to the
  // stack, which gives them to the NIC (Nic::receive) when its receive ring has room.
  using MakeNic = std::function<std::unique_ptr<Nic>(uint32_t node, net::EtherSegment& wire)>;
  // Makes what runs MBCF's protocol on node `node` of `sys` (executor.h). No factory, or a
  // factory that returns null for a node: the host kernel there. Called while `sys` is being
  // built: keep the reference, use it later.
  using MakeExecutor = std::function<std::unique_ptr<Executor>(uint32_t node, EtherSystem& sys)>;
  EtherSystem(Calendar& cal, const EtherSysConfig& c, Stats& stats, uint64_t seed, const MakeNic& make_nic = nullptr,
              const MakeExecutor& make_executor = nullptr);
  virtual ~EtherSystem() = default;
  // Adds the host memory a cluster of `c` holds to `f` before one is built: its hosts (with a
  // conventional NIC) and each host's protocol state for every other host.
  static void footprint(const EtherSysConfig& c, MemoryForecast& f);
  EtherSystem(const EtherSystem&) = delete;
  EtherSystem& operator=(const EtherSystem&) = delete;
  const EtherSysConfig& config() const { return c_; }
  uint32_t nodes() const { return static_cast<uint32_t>(n_.size()); }
  TaskSpace& space(uint32_t node) { return *n_[node]->ts; }
  Calendar& cal() { return cal_; }
  net::EtherSegment& ether() { return *ether_; }
  Nic& nic(uint32_t node) { return *n_[node]->nic; }
  // The host's module (host<n>): its memory, CPU, protocol stack (the kernel's, `stack`) and
  // NIC are its children; a NIC built after the cluster is built inside it (Within).
  sc_core::sc_module& host(uint32_t node) { return *n_[node]->host; }
  host::Cpu& cpu(uint32_t node) { return *n_[node]->cpu; }
  host::Os& os(uint32_t node) { return *n_[node]->os; }
  const host::Os& os(uint32_t node) const { return *n_[node]->os; }
  // The receive routines' work on MBCF structures since the run began (ExecResult::structures,
  // host.int_struct_cycles each), as time on the processors that ran it.
  uint64_t structure_ps() const { return structure_ps_sum_; }
  Executor& executor(uint32_t node) { return *n_[node]->exec; }
  uint64_t cycles_ps(double cycles) const;  // host CPU cycles as time

  // --- the host's physical memory: a TLM-2.0 target (models/mem/memory.h). The OS takes the
  // frames it gives tasks through the memory's DMI; a NIC that does DMA (the MBP2's BIU) binds
  // its initiator socket to it when elaboration ends.
  mem::TargetSocket& host_memory(uint32_t node) { return *n_[node]->memory_target; }
  // A user's TLM-2.0 memory in place of the node's own: before any task on the node has memory
  // and before elaboration ends. It must answer b_transport (the NIC's DMA) and grant read/write
  // DMI over every frame (the host CPU's view). Throws std::logic_error if frames exist.
  void use_host_memory(uint32_t node, mem::TargetSocket& mem);

  // --- other host protocol stacks beside MBCF's on the nodes' NICs (a socket stack, a user's):
  // the receive interrupt routine hands every frame of EtherType `ether_type` that the NIC
  // gives it to `h` instead of to MBCF's code, and goes on after the time `h` returns (ps of
  // whatever runs the routine: the host kernel, or the MBP2's PME). To send, a stack hands
  // frames to the node's NIC (`nic(node).transmit`). Frames of a type no stack took are counted
  // as malformed, as before. Throws std::invalid_argument for MBCF's own type (kEtherType) or a
  // type taken twice.
  using FrameHandler = std::function<uint64_t(uint32_t node, std::vector<uint8_t>&& frame)>;
  void add_protocol(uint16_t ether_type, FrameHandler h);

  // --- for an executor (executor.h) that runs the protocol elsewhere than in the kernel
  using Built = Executor::Built;
  // A user request checked (task, Ltask, 4.4 rules a sender can see, encodability, a payload
  // named by Request::src_laddr readable, the frame and its reply within the MTU with what the
  // NIC adds, Nic::frame_overhead) and made into its packet; false if it cannot be sent.
  bool build_request(uint32_t node, uint32_t ptask, const Request& r, Built& b) const;
  // The commands of a user-built packet (Request::image_laddr) at `laddr` of task `t`: false
  // when the bytes are not readable, do not decode, or set a field only the kernel fills.
  bool user_image(uint32_t node, const Task& t, uint32_t laddr, std::vector<Command>& cmds) const;
  // The same as a user's library call does it: false, counted as refused, when the node has no
  // power or the request cannot be sent.
  bool take_request(uint32_t node, uint32_t ptask, const Request& r, Built& b);
  // Counts a request's commands against their elastic-memory-barrier colours (4.2): an
  // executor does it when it takes the request, before the user can poll the counters.
  void count_emb_requests(uint32_t node, const Packet& p);
  // A request the executor holds that is not numbered yet (quiet() waits for it): taken, and
  // given up (the executor let it go unsent); send_request ends it too.
  void request_taken(uint32_t node) { ++n_[node]->requests_in_flight; }
  void request_given_up(uint32_t node);
  uint32_t requests_in_flight(uint32_t node) const { return n_[node]->requests_in_flight; }
  // A validated request's packet goes to the protocol: while the peer has TH2 packets
  // unacknowledged it waits, behind the node's earlier ones (counted as blocked), then is
  // numbered and sent by Go-back-N; a request for no flow control is sent unnumbered at once.
  void send_request(uint32_t node, uint32_t dst, Packet p);
  // Whether the node has power, and its incarnation (a power cycle starts a new one: work
  // begun in an earlier one is dropped when it comes back).
  bool up(uint32_t node) const { return n_[node]->up; }
  uint32_t incarnation(uint32_t node) const { return n_[node]->incarnation; }
  // The simulated system cannot go on (see failure()).
  void fail(const std::string& why) {
    if (failure_.empty()) failure_ = why;
  }

  // --- the OS: tasks and translation tables
  Task& create_task(uint32_t node, uint32_t ptask, uint32_t key);  // (and tells the node's NIC)
  void set_ltask(uint32_t node, uint32_t ptask, uint32_t ltask, uint32_t to_node, uint32_t to_ptask);
  // Moves a task (its pages copied) and updates every translation table that refers to it
  // (3.3.3). Packets still on their way to the old node are forwarded by it (byte 20 of a
  // forwarded packet carries the original source Pnode, so replies go to the requester).
  void migrate(uint32_t node, uint32_t ptask, uint32_t to_node, uint32_t new_ptask);

  // --- user side (one program per node, on the host CPU)
  // Computes for `ps`, then calls `k`. Interrupts arriving meanwhile delay it. One CPU: work
  // started while other user work runs (a program invoked by MBCF_SIGNAL, which runs on top of
  // the interrupted code like a Unix signal handler, or its light-weight system calls) preempts
  // it, and the preempted work resumes, with the time it still needed, when the new one ends.
  void compute(uint32_t node, uint64_t ps, std::function<void()> k);
  // The MBCF-requesting system call: builds the packet (kernel or user construction),
  // numbers it, hands it to the NIC; `k` runs when the call returns to the user. It blocks
  // while the peer has TH2 packets unacknowledged. Returns false (with no cost) if the
  // request cannot be encoded, the target Ltask is unknown, or it breaks a 4.4 rule that the
  // sender can see.
  bool syscall(uint32_t node, uint32_t ptask, const Request& r, std::function<void()> k);
  // Busy-polls until `pred()` holds; checked after every interrupt routine on the node.
  void poll(uint32_t node, std::function<bool()> pred, std::function<void()> k);
  // The same with a deadline (the loop also reads the clock): `k(true)` when `pred()` held,
  // `k(false)` when the simulated time reached `deadline_ps` first.
  void poll_until(uint32_t node, std::function<bool()> pred, uint64_t deadline_ps, std::function<void(bool)> k);
  // A light-weight system call (4.1, 4.3) on the node's host CPU: the OS's trap
  // (host::Os::lw_enter); then, once what the node's NIC is still writing to host memory has
  // landed, the kernel's work on the structure, `op`, atomic, which returns the bytes it hands
  // the caller; then their copy to the user's buffer (host::Os::lw_leave); then `k`, when the
  // call has returned to the user. (A power loss meanwhile ends it: `k` never runs.)
  using LwOp = std::function<uint64_t()>;
  void lw_syscall(uint32_t node, LwOp op, std::function<void()> k);
  // The MBCF calls, made by task `ptask`; `k` gets what the call returned:
  //   - fifo_read: the oldest entry of the FIFO whose structure is at `fifo` (nullopt: empty);
  //   - signal_reset: the signal structure's next queued record, the running flag kept set, or
  //     nullopt with the flag reset (the queue was empty);
  //   - read_taskque: the oldest TASKQUE entry (nullopt: none).
  using LwResult = std::function<void(std::optional<std::vector<uint8_t>>)>;
  void fifo_read(uint32_t node, uint32_t ptask, uint32_t fifo, LwResult k);
  void signal_reset(uint32_t node, uint32_t ptask, uint32_t signal, LwResult k);
  void read_taskque(uint32_t node, uint32_t ptask, LwResult k);
  // The one the others are: `op` on the task's structures (a task that is gone: nullopt).
  using LwEntryOp = std::function<std::optional<std::vector<uint8_t>>(TaskSpace&, Task&)>;
  void lw_entry_call(uint32_t node, uint32_t ptask, LwEntryOp op, LwResult k);
  // A user program invoked by MBCF_SIGNAL; it must end by calling `done()`.
  using Program = std::function<void(const Invocation&, std::function<void()> done)>;
  void set_program(uint32_t node, uint32_t ptask, uint32_t pc, Program p);

  // --- faults
  void power_off(uint32_t node);
  void power_on(uint32_t node);  // a new incarnation: peers reset their sequence numbers
  void swap_out(uint32_t node, uint32_t ptask, uint32_t laddr);

  // --- introspection
  // Host CPU time spent on communication: system calls and interrupt routines (MBCF/Ether);
  // request building and doorbells (MBP2, whose protocol runs on the NIC).
  uint64_t host_busy_ps(uint32_t node) const;
  uint64_t delivered(uint32_t from, uint32_t to) const;  // sequenced packets accepted in order
  uint32_t unacked(uint32_t from, uint32_t to) const;
  bool quiet() const;  // nothing unacknowledged, nothing queued
  // Why the simulated system cannot go on (empty while it can): a model that finds it so says
  // so here, and the run stops with exit status 2.
  const std::string& failure() const { return failure_; }
  // What is unacknowledged or waiting, per node and peer, for a failure's report. (Not
  // sc_object::dump, which it would hide.)
  std::string state_dump() const;
  // What the NICs did, for a workload's summary: each node's Nic::summary, in node order (null
  // when no NIC says anything, as MBCF/Ether's conventional NIC).
  nlohmann::ordered_json nic_summary() const;
  // Every sequenced command packet accepted, in acceptance order, per (from, to): END_P numbers
  // are mod 256, so tests check the stream of payload tags instead.
  void set_accept_hook(std::function<void(uint32_t from, uint32_t to, const Packet&)> h) { accept_hook_ = std::move(h); }
  // Observes every packet a node hands to its NIC (data, replies, acknowledgements, resends).
  void set_tx_hook(std::function<void(uint32_t from, uint32_t to, const Packet&)> h) { tx_hook_ = std::move(h); }

 private:
  // ---- Who runs the protocol is the node's Executor (executor.h): the host kernel below, or
  // a NIC's firmware (the MBP2's). Everything else is here: command semantics, packets,
  // Go-back-N, combining, page faults, migration. (The NIC is the node's `Nic`.)
  using Rx = Nic::Rx;
  using RxReady = Nic::RxReady;
  using Order = gbn::Order;
  // The host kernel runs the protocol on the host CPU (chapter 6): a system call, the receive
  // interrupt routine, the kernel's copies.
  class Kernel final : public sc_core::sc_module, public Executor {
   public:
    Kernel(sc_core::sc_module_name name, EtherSystem& s, uint32_t node) : sc_core::sc_module(name), s_(s), node_(node) {}
    uint64_t proto_ps(double kernel_cycles) const override { return s_.cycles_ps(kernel_cycles); }
    void work(uint64_t dur, std::function<void()> fn) override { s_.interrupt(node_, dur, std::move(fn)); }
    void issue(uint32_t ptask, const Request& r, Built b, std::function<void()> k) override;
    uint64_t rx_entry_ps() override { return s_.os(node_).interrupt_entry_ps(); }
    std::string track_name() const override { return s_.cpu(node_).name(); }
    void upcall(uint64_t msg, std::function<void()> k) override { (void)msg, k(); }
    uint64_t data_move_ps(const Packet& p, ExecResult& r) override {
      (void)p;
      return s_.copy_ps(r.data_bytes);
    }
    void run_pollers(uint64_t at) override { s_.cpu(node_).run_pollers(at); }

   private:
    EtherSystem& s_;
    const uint32_t node_;
  };
  Executor& ex(uint32_t node) const { return *n_[node]->exec; }
  // The system call's side of a request (Kernel::issue): the kernel builds the packet and sends it.
  void kernel_issue(uint32_t node, Built b, std::function<void()> k);
  std::string failure_;
  bool must_wait(uint32_t node, uint32_t dst, const Packet& p) const;
  // The packet goes to the protocol now: numbered and sent (or sent unnumbered without flow
  // control).
  void submit(uint32_t node, uint32_t dst, Packet p);
  uint64_t copy_ps(uint32_t bytes) const { return n_.front()->os->copy_ps(bytes); }  // (one OS for all hosts)

  // The host's side of a peer (the protocol's is in Node::gbn).
  struct Peer {
    uint64_t last_progress = 0;  // when the pair last made acknowledgement progress
    uint64_t delivered = 0;
    std::deque<std::function<void()>> blocked;  // system calls waiting for room (TH2)
    bool releasing = false;  // a released call is paying for its system call: the next waits for it
  };
  // Go-back-N's actions, carried out for one node: frames to the NIC, timers on the calendar.
  class GbnHost final : public gbn::Actions {
   public:
    GbnHost(EtherSystem& s, uint32_t node) : s_(s), node_(node) {}
    void send(uint32_t peer, const Packet& p) override;
    void set_timer(gbn::Timer t, uint32_t peer, double us, uint64_t tag) override;
    void progress(uint32_t peer) override;
    void arrived(uint32_t peer, uint8_t count) override;
    void release(uint32_t peer) override;

   private:
    EtherSystem& s_;
    uint32_t node_;
  };
  struct Combine {
    uint32_t pending = 0, pages = 1;
    bool root = false;
    uint32_t parent_node = 0, parent_origin = 0;
    Packet reply_to;  // root: requester fields; the deferred reply
    Command deferred;
  };
  struct Node {
    std::unique_ptr<Group> host;  // the host's module, parent of the modules below (first: last to go)
    std::unique_ptr<mem::Memory> memory;       // the host's own physical memory
    mem::TargetSocket* memory_target = nullptr;  // it, or a user's in its place
    std::unique_ptr<host::Cpu> cpu;  // shared by the user program, system calls and interrupts
    std::unique_ptr<host::Os> os;    // the OS's costs (host<n>.os)
    std::unique_ptr<TaskSpace> ts;   // the OS's tasks and page tables (host<n>.os.tasks)
    // Requests issued and not yet numbered: a system call still building its packet, or on the
    // MBP2 a doorbell the NIC is still working on (PGE fetch, header build). quiet() waits for
    // them: a request there is neither unacknowledged nor blocked yet.
    uint32_t requests_in_flight = 0;
    std::unique_ptr<Nic> nic;
    std::unique_ptr<Executor> exec;  // what runs the protocol
    std::deque<Rx> ring;  // received, DMA'd, waiting for the interrupt routine
    uint32_t ring_used = 0;
    bool in_isr = false;
    uint32_t batch = 0;
    // protocol
    std::vector<Peer> peers;
    std::unique_ptr<GbnHost> gbn_host;
    std::unique_ptr<gbn::Endpoint> gbn;
    uint32_t tx_buffers_used = 0;
    bool up = true;
    uint32_t incarnation = 0;
    uint32_t next_origin = 1;
    std::map<uint32_t, Combine> combines;
    std::map<std::pair<uint32_t, uint32_t>, Program> programs;
    // Local requests that found the save area full: the system calls that wait for room (and
    // a kernel-made local packet), resumed after a page-in.
    std::deque<std::function<void()>> save_waiters;
  };

  void interrupt(uint32_t node, uint64_t dur, std::function<void()> fn) { n_[node]->cpu->interrupt(dur, std::move(fn)); }
  // Wakes the programs polling memory whose conditions now hold (after `poll_cycles`).
  void run_pollers(uint32_t node, uint64_t at) { n_[node]->exec->run_pollers(at); }
  // transmit path
  void transmit(uint32_t node, uint32_t peer, Packet p);
  void nic_send(uint32_t node, uint32_t dst, const Packet& p);
  void send_sequenced(uint32_t node, uint32_t peer, Packet p);
  void note_reply(uint32_t to) { replied_ = replied_ || to == reply_peer_; }
  void release_blocked(uint32_t node, uint32_t peer);
  // receive path
  void on_frame(uint32_t node, std::vector<uint8_t>&& frame);
  void isr_step(uint32_t node);
  void trace_receive(uint32_t node, uint32_t from, Cmd cmd, uint64_t flow, uint64_t cost, bool back);
  uint64_t packet_cost(uint32_t node, const Packet& p, ExecResult& r);
  void accept(uint32_t node, const Packet& p);
  void deliver_to_task(uint32_t node, const Packet& p);
  void after_exec(uint32_t node, const Packet& p, const ExecResult& r);
  void send_kernel_packet(uint32_t node, uint32_t dst_node, uint32_t dst_ptask, uint32_t dst_key, std::vector<Command> cmds,
                          bool no_flow);
  void on_ack(uint32_t node, const Command& c);
  void finish_combine(uint32_t node, uint32_t origin);
  void page_in_done(uint32_t node, uint32_t ptask);
  // The save area: packets held now, and whether a packet would have to wait in a full one.
  uint32_t saved_packets(uint32_t node) const;
  bool save_area_full(uint32_t node, const Packet& p) const;
  void run_save_waiters(uint32_t node);
  void check_save_area(uint32_t node);
  void run_invocation(uint32_t node, const Invocation& iv);
  uint32_t reply_node(const Packet& p) const;

  // The packet being handled: its host cost and what it sends once that cost has elapsed.
  uint64_t step_cost_ = 0;
  uint32_t reply_peer_ = 0;  // the peer whose packet the interrupt routine is processing
  bool replied_ = false;     // ... and something goes back to it (its RECV_P answers an ack request)
  std::vector<std::function<void()>> outbox_;
  // The transaction timeline: a user request's flow runs from its submission through the
  // receiver's routine to the reply's routine back at the requester. The flow of the packet
  // the routine is working on (what it sends carries it on), each sequenced packet's flow by
  // (from, to, END_P) while it is on the wire, and the node each flow started at.
  uint64_t tl_flow_ = 0;
  std::map<std::tuple<uint32_t, uint32_t, uint8_t>, uint64_t> tl_wire_;
  std::map<uint64_t, uint32_t> tl_origin_;
  static constexpr const char* kTlFlow = "MBCF request to its reply";

  Calendar& cal_;
  EtherSysConfig c_;
  Stats& stats_;
  std::vector<std::unique_ptr<Node>> n_;
  std::unique_ptr<net::EtherSegment> ether_;
  std::vector<std::pair<uint16_t, FrameHandler>> protocols_;  // (few: a linear search)
  std::function<void(uint32_t, uint32_t, const Packet&)> accept_hook_;
  std::function<void(uint32_t, uint32_t, const Packet&)> tx_hook_;
  Counter &sent_, &received_, &malformed_, &violations_, &dup_, &gap_, &resends_, &resend_reqs_, &acks_sent_,
      &ring_drops_, &timeouts_, &ack_polls_, &th1_cuts_, &faults_, &forwards_, &invocations_, &wakeups_, &blocked_, &peer_resets_, &peers_unresponsive_, &abandoned_, &hellos_, &stale_,
      &nic_drops_down_, &refused_, &save_full_, &structures_, &structure_ps_;
  Histogram& isr_batch_;
  uint64_t structure_ps_sum_ = 0;  // (structure_ps(): counters may be reset by a run's phases)
};

}  // namespace mbpsim::mbcf
