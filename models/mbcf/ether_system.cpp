// MBCF/Ether's cluster (chapter 6): construction of the nodes, the OS (tasks, Ltasks, migration,
// host memory), the host CPU's time sharing between user code, system calls and interrupts, the
// MBCF system call, faults (power loss, swapping) and introspection. The kernel's protocol path
// (transmit, Go-back-N's actions, receive and the executor) is in ether_stack.cpp.
#include "models/mbcf/ether_system.h"

#include "models/core/mutant.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>

#include "models/core/bytes.h"
#include "models/core/error.h"
#include "models/core/module_tree.h"
#include "models/mbcf/conventional_nic.h"
#include "models/core/timeline.h"

namespace mbpsim::mbcf {

void EtherSystem::footprint(const EtherSysConfig& c, MemoryForecast& f) {
  const uint64_t n = c.nodes;
  // A host: its modules (host, OS, memory with its socket, CPU, NIC, executor), its statistics
  // and the pages of memory the protocol's buffers and the workload's regions use; the
  // cluster's own part (segment, statistics, workload). Calibrated, not derived: peak RSS of
  // mbcf_tester on 16 and 64 hosts with conventional NICs, less the process and the peers'
  // state, is 190 KiB per host and 600 KiB besides (docs/PERFORMANCE.md, "Predicted memory").
  constexpr uint64_t kHostBytes = 190 * 1024, kClusterBytes = 600 * 1024;
  f.add("hosts", kClusterBytes + n * (heap_bytes(sizeof(Node)) + kHostBytes), "mbcf.nodes");
  // Each host keeps a peer record, with Go-back-N's, for every host.
  f.add("peer state", n * n * (sizeof(Peer) + deque_bytes<std::function<void()>>() + gbn::Endpoint::bytes_per_peer()),
        "mbcf.nodes^2");
}

EtherSystem::EtherSystem(Calendar& cal, const EtherSysConfig& c, Stats& st, uint64_t seed, const MakeNic& make_nic,
                         const MakeExecutor& make_executor)
    // (The name is a temporary: the hosts and the segment built below are the siblings of
    // this module, not its children.)
    : sc_core::sc_module(sc_core::sc_module_name("mbcf")),
      cal_(cal),
      c_(c),
      stats_(st),
      sent_(st.counter(stat_name(*this, "packets_sent"), "MBCF/Ether packets handed to a NIC (acks and retransmissions included)")),
      received_(st.counter(stat_name(*this, "packets_received"), "frames taken by the receive interrupt routine")),
      malformed_(st.counter(stat_name(*this, "malformed"), "received packets rejected by the decoder")),
      violations_(st.counter(stat_name(*this, "violations"), "packets refused: task, key, address, permission or 4.4 rule")),
      dup_(st.counter(stat_name(*this, "duplicates"), "sequenced packets received twice (dropped, re-acknowledged)")),
      gap_(st.counter(stat_name(*this, "out_of_order"), "sequenced packets dropped after a gap")),
      resends_(st.counter(stat_name(*this, "retransmissions"), "handshaked retransmissions")),
      resend_reqs_(st.counter(stat_name(*this, "resend_requests"), "resend-requesting packets sent")),
      acks_sent_(st.counter(stat_name(*this, "acks_sent"), "acknowledgement-only packets sent")),
      ring_drops_(st.counter(stat_name(*this, "rx_ring_drops"), "frames dropped by a NIC whose receive ring was full")),
      timeouts_(st.counter(stat_name(*this, "timeouts"), "acknowledgement timeouts that led to a handshaked resend")),
      ack_polls_(st.counter(stat_name(*this, "ack_polls"), "timer expiries with no request outstanding: an ack request sent to collect the tail")),
      th1_cuts_(st.counter(stat_name(*this, "th1_reductions"), "times TH1 was lowered for a lack of buffers")),
      faults_(st.counter(stat_name(*this, "page_faults"), "commands that found their target page swapped out")),
      forwards_(st.counter(stat_name(*this, "multicast_forwards"), "multicast copies sent along patterns")),
      invocations_(st.counter(stat_name(*this, "invocations"), "user programs invoked by MBCF_SIGNAL")),
      wakeups_(st.counter(stat_name(*this, "wakeups"), "blocked tasks woken by the scheduling option")),
      blocked_(st.counter(stat_name(*this, "blocked_syscalls"), "system calls that waited for room (TH2)")),
      peer_resets_(st.counter(stat_name(*this, "peer_resets"), "sequence resets after a peer restarted (its Hello)")),
      peers_unresponsive_(st.counter(stat_name(*this, "peers_unresponsive"), "times a peer missed mbcf.max_timeouts timeouts in a row (then probed with back-off)")),
      abandoned_(st.counter(stat_name(*this, "packets_abandoned"), "unacknowledged packets dropped because their peer restarted")),
      hellos_(st.counter(stat_name(*this, "hellos"), "Hellos sent by restarted nodes, repeats included")),
      stale_(st.counter(stat_name(*this, "stale_frames"), "frames from a peer dropped while our restart Hello was unanswered")),
      nic_drops_down_(st.counter(stat_name(*this, "dropped_while_down"), "frames that reached a powered-off node")),
      refused_(st.counter(stat_name(*this, "requests_refused"),
                          "requests refused before anything was sent: an Ltask not in the task's table, a command users may not send, a 4.4 rule the sender can see, or a packet or reply that would not fit a frame")),
      save_full_(st.counter(stat_name(*this, "save_area_full"),
                            "packets for a task waiting for a page-in that found the save area full (mbcf.save_area): not accepted, so Go-back-N brings them again; a local request waits")),
      structures_(st.counter(stat_name(*this, "structures"), "MBCF structures (a FIFO's, a signal's) the receive routines read, checked and updated")),
      structure_ps_(st.counter(stat_name(*this, "structure_ps"), "the receive routines' time on those structures (host.int_struct_cycles each)", "ps")),
      isr_batch_(st.histogram(stat_name(*this, "isr_batch"), "packets handled per receive interrupt", "packets")) {
  gbn::Params gp = c.gbn_params();
  const gbn::Counters counts{dup_,      gap_,        resends_,     resend_reqs_,        acks_sent_, timeouts_, ack_polls_,
                             th1_cuts_, peer_resets_, peers_unresponsive_, abandoned_, hellos_,   stale_};
  for (uint32_t i = 0; i < c.nodes; ++i) {
    n_.push_back(std::make_unique<Node>());
    Node& N = *n_.back();
    N.peers.resize(c.nodes);
    // The host (host<n>) holds its OS, memory, CPU, protocol stack and NIC.
    N.host = std::make_unique<Group>(("host" + std::to_string(i)).c_str());
    Within in(*N.host);
    N.memory = std::make_unique<mem::Memory>("memory", c.page_bytes);
    N.cpu = std::make_unique<host::Cpu>("cpu", cal, c.cpu_mhz, c.poll_cycles);
    N.os = std::make_unique<host::Os>("os", *N.cpu, c_.os, st);
    {
      Within in_os(*N.os);
      N.ts = std::make_unique<TaskSpace>("tasks", i, c.page_bytes);
    }
    use_host_memory(i, N.memory->socket);
    gp.self = i;
    N.gbn_host = std::make_unique<GbnHost>(*this, i);
    N.gbn = std::make_unique<gbn::Endpoint>(gp, counts, *N.gbn_host);
  }
  ether_ = std::make_unique<net::EtherSegment>("ether", cal, c.ether, c.nodes, st, seed);
  ether_->set_rx([this](uint32_t s, std::vector<uint8_t>&& f) { on_frame(s, std::move(f)); });
  for (uint32_t i = 0; i < c.nodes; ++i) {
    // What the factories make is built inside the host (host<n>.stack, host<n>.nic when they are
    // modules).
    Within in(*n_[i]->host);
    if (make_executor) n_[i]->exec = make_executor(i, *this);
    if (!n_[i]->exec) n_[i]->exec = std::make_unique<Kernel>("stack", *this, i);
    if (make_nic) {
      n_[i]->nic = make_nic(i, *ether_);
      continue;
    }
    // The conventional NIC's DMA reaches the host's memory; its transmit completion runs the
    // driver's routine on the host CPU.
    n_[i]->nic = std::make_unique<ConventionalNic>(
        "nic", cal, c_, *ether_, i, *n_[i]->ts, [this, i]() -> mem::TargetSocket& { return host_memory(i); }, *n_[i]->cpu, stats_,
        [this, i] {
          if (c_.tx_done_cycles > 0) interrupt(i, cycles_ps(c_.tx_done_cycles), [] {});
        },
        [this](const std::string& why) { fail(why); });
  }
}

gbn::Params EtherSysConfig::gbn_params() const {
  gbn::Params gp;
  gp.nodes = nodes;
  gp.th1 = th1;
  gp.th1_min = th1_min;
  gp.th2 = th2;
  gp.tx_buffers = tx_buffers;
  gp.ack_timeout_us = ack_timeout_us;
  gp.resend_timeout_us = resend_timeout_us;
  gp.max_backoff_us = max_backoff_us;
  gp.max_timeouts = max_timeouts;
  return gp;
}

uint64_t EtherSystem::cycles_ps(double cycles) const { return n_.front()->cpu->cycles_ps(cycles); }  // (one clock for all hosts)

// ------------------------------------------------------------------ OS

void EtherSystem::use_host_memory(uint32_t node, mem::TargetSocket& mem) {
  Node& N = *n_[node];
  N.ts->set_frame_source([this, node, &mem](uint32_t f) {
    return mem::frame_by_dmi(*mem.get_base_export().operator->(), f, c_.page_bytes, "node " + std::to_string(node));
  });
  N.memory_target = &mem;
}

void EtherSystem::add_protocol(uint16_t ether_type, FrameHandler h) {
  char t[8];
  std::snprintf(t, sizeof t, "0x%04x", ether_type);
  if (ether_type == kEtherType) throw std::invalid_argument(std::string("EtherType ") + t + " is MBCF/Ether's own");
  for (const auto& p : protocols_)
    if (p.first == ether_type) throw std::invalid_argument(std::string("EtherType ") + t + " already has a protocol stack");
  protocols_.emplace_back(ether_type, std::move(h));
}

Task& EtherSystem::create_task(uint32_t node, uint32_t ptask, uint32_t key) {
  Task& t = n_[node]->ts->create_task(ptask, key);
  n_[node]->nic->task_created(ptask);
  return t;
}

void EtherSystem::set_ltask(uint32_t node, uint32_t ptask, uint32_t ltask, uint32_t to_node, uint32_t to_ptask) {
  Task* t = n_[node]->ts->find(ptask);
  Task* d = n_[to_node]->ts->find(to_ptask);
  if (!t || !d) internal_error("set_ltask: no such task");
  t->ltt[ltask] = LtaskEntry{to_node, to_ptask, d->key};
}

void EtherSystem::migrate(uint32_t node, uint32_t ptask, uint32_t to_node, uint32_t new_ptask) {
  TaskSpace& from = *n_[node]->ts;
  TaskSpace& to = *n_[to_node]->ts;
  std::unique_ptr<Task> t = from.remove(ptask);
  if (!t) internal_error("migrate: no such task");
  n_[node]->nic->task_left(ptask);
  // Pages move by copy: each gets a frame on the new node (aliases on the old node end).
  for (auto& kv : t->pages) {
    const uint32_t f = to.alloc_frame();
    std::copy(from.frame(kv.second.frame), from.frame(kv.second.frame) + c_.page_bytes, to.frame(f));
    kv.second.frame = f;
  }
  t->ptask = new_ptask;
  to.adopt(std::move(t));
  from.set_moved(ptask, Moved{to_node, new_ptask});
  for (auto& nd : n_)
    for (auto& kv : nd->ts->tasks())
      for (auto& e : kv.second->ltt)
        if (e.second.pnode == node && e.second.ptask == ptask) e.second = LtaskEntry{to_node, new_ptask, e.second.key};
}

// ------------------------------------------------------------------ CPU

void EtherSystem::compute(uint32_t node, uint64_t ps, std::function<void()> k) { n_[node]->cpu->compute(ps, std::move(k)); }

void EtherSystem::poll(uint32_t node, std::function<bool()> pred, std::function<void()> k) {
  n_[node]->cpu->poll(std::move(pred), std::move(k));
}

void EtherSystem::poll_until(uint32_t node, std::function<bool()> pred, uint64_t deadline_ps, std::function<void(bool)> k) {
  auto done = std::make_shared<bool>(false);
  auto pr = std::make_shared<std::function<bool()>>(std::move(pred));
  auto p = [this, pr, deadline_ps] { return (*pr)() || cal_.now_ps() >= deadline_ps; };
  const bool armed = !p();
  poll(node, p, [pr, done, k = std::move(k)] {
    *done = true;
    k((*pr)());
  });
  // The deadline passing is noticed on the loop's next iteration, like a condition.
  if (armed) cal_.at(deadline_ps, [this, node, done] {
    if (!*done) run_pollers(node, cal_.now_ps());
  });
}


void EtherSystem::lw_syscall(uint32_t node, LwOp op, std::function<void()> k) {
  os(node).lw_enter([this, node, op = std::move(op), k = std::move(k)]() mutable {
    ex(node).quiesce([this, node, op = std::move(op), k = std::move(k)]() mutable {
      // What the call copies to the user was written by the host kernel's receive routine
      // (in the cache), or by a NIC's DMA (`writes()`: the MBP2's ADMA), which no cache holds.
      const auto d = ex(node).writes() ? host::Os::Data::Cold : host::Os::Data::Warm;
      os(node).lw_leave(op(), d, std::move(k));
    });
  });
}

void EtherSystem::lw_entry_call(uint32_t node, uint32_t ptask, LwEntryOp op, LwResult k) {
  auto got = std::make_shared<std::optional<std::vector<uint8_t>>>();
  lw_syscall(
      node,
      [this, node, ptask, got, op = std::move(op)]() -> uint64_t {
        Task* t = n_[node]->ts->find(ptask);
        if (t) *got = op(*n_[node]->ts, *t);
        return *got ? (*got)->size() : 0;
      },
      [got, k = std::move(k)] { k(std::move(*got)); });
}

void EtherSystem::fifo_read(uint32_t node, uint32_t ptask, uint32_t fifo, LwResult k) {
  lw_entry_call(node, ptask, [fifo](TaskSpace& ts, Task& t) { return mbcf::fifo_pop(ts, t, fifo); }, std::move(k));
}

void EtherSystem::signal_reset(uint32_t node, uint32_t ptask, uint32_t signal, LwResult k) {
  lw_entry_call(node, ptask, [signal](TaskSpace& ts, Task& t) { return mbcf::signal_reset(ts, t, signal); }, std::move(k));
}

void EtherSystem::read_taskque(uint32_t node, uint32_t ptask, LwResult k) {
  lw_entry_call(node, ptask, [](TaskSpace&, Task& t) { return mbcf::read_taskque(t); }, std::move(k));
}

void EtherSystem::set_program(uint32_t node, uint32_t ptask, uint32_t pc, Program p) {
  n_[node]->programs[{ptask, pc}] = std::move(p);
}

uint64_t EtherSystem::host_busy_ps(uint32_t node) const { return n_[node]->cpu->busy_ps(); }

nlohmann::ordered_json EtherSystem::nic_summary() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& N : n_) {
    nlohmann::ordered_json j = N->nic->summary();
    if (!j.is_null()) out.push_back(std::move(j));
  }
  if (out.empty()) return nullptr;
  return out;
}

// ------------------------------------------------------------------ system call

bool EtherSystem::user_image(uint32_t node, const Task& t, uint32_t laddr, std::vector<Command>& cmds) const {
  const TaskSpace& ts = *n_[node]->ts;
  // The user's bytes must be there, readable and present, as a payload must.
  auto readable = [&](uint32_t n) {
    bool present = false;
    return ts.check(t, laddr, n, kPermRead, &present) == ViolationCode::None && present;
  };
  if (!readable(kHeaderBytes)) return false;
  uint8_t head[kHeaderBytes];
  ts.read(t, laddr, head, kHeaderBytes);
  const uint32_t total = load_be16(head + 14);  // the total-length field
  if (total < kHeaderBytes || total > kMaxPacketBytes || !readable(total)) return false;
  std::vector<uint8_t> image(total);
  ts.read(t, laddr, image.data(), total);
  // The kernel's fields: the Ethernet addresses (0-11), the source Pnode, the reserved byte and
  // the protocol bytes (16-23), the source Ptask and key and the destination Ptask and key
  // (24-39). A user that sets any of them is forging what only the kernel may say.
  for (uint32_t i = 0; i < kHeaderBytes; ++i)
    if ((i < 12 || i >= 16) && image[i] != 0) return false;
  Packet p;
  if (decode(image.data(), image.size(), p) != DecodeError::None) return false;
  cmds = std::move(p.cmds);
  return true;
}

bool EtherSystem::build_request(uint32_t node, uint32_t ptask, const Request& r, Built& b) const {
  const Task* t = n_[node]->ts->find(ptask);
  if (!t) return false;
  std::vector<Command> built;
  if (r.image_laddr != kNoAddr && (!r.cmds.empty() || r.src_laddr != kNoAddr || !user_image(node, *t, r.image_laddr, built))) return false;
  const std::vector<Command>& cmds = r.image_laddr != kNoAddr ? built : r.cmds;
  b.user_built = r.image_laddr != kNoAddr;
  if (cmds.empty()) return false;
  auto it = t->ltt.find(r.ltask);
  if (it == t->ltt.end()) return false;
  if (cmds.size() > 1)
    for (const Command& c : cmds)
      if (is_atomic(c.cmd)) return false;
  for (const Command& c : cmds)
    if (!is_user_command(c.cmd)) return false;
  Packet& p = b.packet;
  p.src_pnode = node;
  p.src_ptask = ptask;
  p.src_key = t->key;
  p.dst_ptask = it->second.ptask;
  p.dst_key = it->second.key;
  p.cmds = cmds;
  if (r.src_laddr != kNoAddr) {
    // The payload is in the requester's memory: it must be there, readable and present (a
    // page-in is the caller's business, not the call's).
    if (cmds.size() != 1) return false;
    std::vector<uint8_t>& d = p.cmds[0].data;
    bool present = false;
    if (!d.empty()) {
      if (n_[node]->ts->check(*t, r.src_laddr, static_cast<uint32_t>(d.size()), kPermRead, &present) != ViolationCode::None || !present)
        return false;
      n_[node]->ts->read(*t, r.src_laddr, d.data(), static_cast<uint32_t>(d.size()));
    }
  }
  if (!encodable(p)) return false;
  const uint32_t bytes = packet_bytes(p);
  // The request and the reply it asks for must fit a frame (4.4), with what the NIC adds to
  // every frame (a sealed frame, crypto.h).
  const uint32_t overhead = n_[node]->nic->frame_overhead();
  if (bytes + overhead > kMaxPacketBytes) return false;
  if (reply_packet_bytes(p.cmds) + overhead > kMaxPacketBytes) return false;
  b.dst = it->second.pnode;
  b.wire_bytes = bytes;
  b.data = 0;
  for (const Command& c : p.cmds) b.data += static_cast<uint32_t>(c.data.size());
  return true;
}

bool EtherSystem::take_request(uint32_t node, uint32_t ptask, const Request& r, Built& b) {
  if (!n_[node]->up) return false;  // a node without power runs no program
  if (!build_request(node, ptask, r, b)) {
    refused_.inc();
    return false;
  }
  return true;
}

bool EtherSystem::syscall(uint32_t node, uint32_t ptask, const Request& r, std::function<void()> k) {
  Built b;
  if (!take_request(node, ptask, r, b)) return false;
  ex(node).issue(ptask, r, std::move(b), std::move(k));
  return true;
}

void EtherSystem::request_given_up(uint32_t node) {
  if (n_[node]->requests_in_flight) --n_[node]->requests_in_flight;
  ex(node).request_numbered();
}

void EtherSystem::send_request(uint32_t node, uint32_t dst, Packet p) {
  if (must_wait(node, dst, p)) {  // TH2: the request waits (in the executor's memory) for the window
    blocked_.inc();
    n_[node]->peers[dst].blocked.push_back([this, node, dst, p]() mutable { submit(node, dst, std::move(p)); });
    return;
  }
  submit(node, dst, std::move(p));
}

void EtherSystem::count_emb_requests(uint32_t node, const Packet& p) {
  Task* t = n_[node]->ts->find(p.src_ptask);
  for (const Command& c : p.cmds)
    if (c.opt.emb && t) ++t->emb_requests[c.opt.emb_colour & 15];
}

void EtherSystem::submit(uint32_t node, uint32_t dst, Packet p) {
  if (n_[node]->requests_in_flight) --n_[node]->requests_in_flight;
  if (Timeline* tl = timeline(); tl && dst != node && !ex(node).track_name().empty()) {  // the request's flow leaves from the requester's protocol work
    p.tl_flow = tl->next_flow_id();
    tl_origin_[p.tl_flow] = node;
    tl->flow(tl->track(ex(node).track_name()), kTlFlow, p.tl_flow, 's', cal_.now_ps());
  }
  ex(node).request_numbered();
  if (p.cmds[0].opt.no_flow_control) {
    p.ctrl_p |= kNoFlow;
    nic_send(node, dst, p);
  } else {
    send_sequenced(node, dst, std::move(p));
  }
}

// True while the peer has TH2 packets unacknowledged (a flow-controlled request must wait).
bool EtherSystem::must_wait(uint32_t node, uint32_t dst, const Packet& p) const {
  if (p.cmds[0].opt.no_flow_control || dst == node) return false;
  const Peer& P = n_[node]->peers[dst];
  // Behind the calls already waiting, too: the node's requests to a peer keep their order.
  return n_[node]->gbn->window_full(dst) || !P.blocked.empty() || P.releasing;
}

void EtherSystem::Kernel::issue(uint32_t ptask, const Request& r, Built b, std::function<void()> k) {
  (void)ptask, (void)r;  // (built into `b`)
  s_.kernel_issue(node_, std::move(b), std::move(k));
}

void EtherSystem::kernel_issue(uint32_t node, Built b, std::function<void()> k) {
  Node& N = *n_[node];
  const uint32_t dst = b.dst, data = b.data, wire_bytes = b.wire_bytes;
  Packet& p = b.packet;
  uint64_t cost = cycles_ps(c_.syscall_cycles + (p.cmds.size() - 1) * c_.int_command_cycles);
  // Kernel construction copies the user's data once into the NIC-DMA buffer; user
  // construction builds the body in user space first, and the kernel copies the whole packet.
  cost += b.user_built ? cycles_ps(c_.user_build_cycles) + copy_ps(data) + copy_ps(wire_bytes) : copy_ps(data);
  // The request counts for its barrier colour once issued, whenever it leaves (the user is
  // held in the system call until then anyway).
  count_emb_requests(node, p);
  ++N.requests_in_flight;
  const uint64_t called = cal_.now_ps();
  auto go = [this, node, dst, p, k, called]() mutable {
    if (Timeline* tl = timeline())  // the MBCF system call on the host CPU, blocked time included
      tl->slice(tl->track(n_[node]->cpu->name()), std::string(to_string(p.cmds[0].cmd)) + " system call", called, cal_.now_ps(),
                "{\"commands\":" + std::to_string(p.cmds.size()) + ",\"dst\":" + std::to_string(dst) + "}");
    submit(node, dst, std::move(p));
    k();
  };
  if (dst == node && save_area_full(node, p)) {  // to a task of our own whose save area is full
    save_full_.inc();
    N.save_waiters.push_back([this, node, cost, go]() mutable {
      n_[node]->cpu->charge(cost);
      compute(node, cost, go);
    });
    return;
  }
  if (must_wait(node, dst, p)) {
    blocked_.inc();
    // Released when there is room, one at a time: the call pays for itself on the CPU, its
    // packet is numbered, and only then may the next waiting call go (order and window kept).
    N.peers[dst].blocked.push_back([this, node, dst, cost, go]() mutable {
      n_[node]->cpu->charge(cost);
      n_[node]->peers[dst].releasing = true;
      compute(node, cost, [this, node, dst, go]() mutable {
        n_[node]->peers[dst].releasing = false;
        go();
        release_blocked(node, dst);
      });
    });
    return;
  }
  N.cpu->charge(cost);
  compute(node, cost, go);
}

// ------------------------------------------------------------------ faults

void EtherSystem::power_off(uint32_t node) {
  Node& N = *n_[node];
  N.up = false;
  N.requests_in_flight = 0;  // what the host or NIC was still building is lost with the power
  // So is the user program: its computation, what it preempted and what it polled for never
  // continue (a program on the restarted node is started anew by the workload).
  N.cpu->power_off();
  N.save_waiters.clear();  // calls that waited for the save area die with their programs
  N.nic->power_off();
  ether_->set_deaf(node, true);
  N.ring.clear();
  N.ring_used = 0;
  N.in_isr = false;
}

void EtherSystem::power_on(uint32_t node) {
  Node& N = *n_[node];
  N.up = true;
  ++N.incarnation;
  ether_->set_deaf(node, false);
  for (auto& P : N.peers) {
    P.blocked.clear();
    P.releasing = false;
  }
  N.gbn->restart(N.incarnation);  // every number reset, every peer greeted
}

void EtherSystem::swap_out(uint32_t node, uint32_t ptask, uint32_t laddr) {
  Task* t = n_[node]->ts->find(ptask);
  if (!t) return;
  n_[node]->ts->set_present(*t, laddr, false);
  n_[node]->nic->page_unmapped(ptask, laddr);
}

// ------------------------------------------------------------------ introspection

uint64_t EtherSystem::delivered(uint32_t from, uint32_t to) const { return n_[to]->peers[from].delivered; }
uint32_t EtherSystem::unacked(uint32_t from, uint32_t to) const {
  return static_cast<uint32_t>(n_[from]->gbn->unacked(to).size());
}

bool EtherSystem::quiet() const {
  for (const auto& N : n_)
    for (uint32_t q = 0; q < N->peers.size(); ++q)
      if (!N->gbn->unacked(q).empty() || !N->peers[q].blocked.empty()) return false;
  for (const auto& N : n_)
    if (N->requests_in_flight) return false;
  return true;
}

std::string EtherSystem::state_dump() const {
  std::string s;
  char buf[160];
  for (uint32_t i = 0; i < n_.size(); ++i)
    for (uint32_t j = 0; j < n_.size(); ++j) {
      const Peer& P = n_[i]->peers[j];
      const gbn::Endpoint& G = *n_[i]->gbn;
      const auto& unacked = G.unacked(j);
      if (unacked.empty() && P.blocked.empty()) continue;
      std::snprintf(buf, sizeof buf, "  node %u -> %u: %zu unacknowledged (oldest END_P %u), sent %u, %zu blocked calls%s%s\n", i, j,
                    unacked.size(), unacked.empty() ? 0u : unacked.front().end_p, G.sent(j), P.blocked.size(),
                    G.tx_state(j) == gbn::TxState::Resending ? ", resending" : "", n_[i]->up ? "" : ", node powered off");
      s += buf;
      // The oldest packets: what they carry, and how long the pair has made no progress.
      for (size_t k = 0; k < std::min<size_t>(3, unacked.size()); ++k) {
        const Packet& q = unacked[k];
        std::string cmds;
        for (const Command& c : q.cmds) cmds += std::string(cmds.empty() ? "" : "+") + to_string(c.cmd);
        std::snprintf(buf, sizeof buf, "    END_P %u: task %u -> task %u, %s, no progress for %.0f us\n", q.end_p, q.src_ptask, q.dst_ptask,
                      cmds.empty() ? "control" : cmds.c_str(), (cal_.now_ps() - P.last_progress) / 1e6);
        s += buf;
      }
    }
  return s;
}

}  // namespace mbpsim::mbcf
