#include "models/mbcf/ether_system.h"

#include "models/core/mutant.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "models/core/error.h"

namespace mbpsim::mbcf {

EtherSystem::EtherSystem(Calendar& cal, const EtherSysConfig& c, Stats& st, uint64_t seed)
    : cal_(cal),
      c_(c),
      stats_(st),
      sent_(st.counter("system.mbcf.packets_sent", "MBCF/Ether packets handed to a NIC (acks and retransmissions included)")),
      received_(st.counter("system.mbcf.packets_received", "frames taken by the receive interrupt routine")),
      malformed_(st.counter("system.mbcf.malformed", "received packets rejected by the decoder")),
      violations_(st.counter("system.mbcf.violations", "packets refused: task, key, address, permission or 4.4 rule")),
      dup_(st.counter("system.mbcf.duplicates", "sequenced packets received twice (dropped, re-acknowledged)")),
      gap_(st.counter("system.mbcf.out_of_order", "sequenced packets dropped after a gap")),
      resends_(st.counter("system.mbcf.retransmissions", "handshaked retransmissions")),
      resend_reqs_(st.counter("system.mbcf.resend_requests", "resend-requesting packets sent")),
      acks_sent_(st.counter("system.mbcf.acks_sent", "acknowledgement-only packets sent")),
      ring_drops_(st.counter("system.mbcf.rx_ring_drops", "frames dropped by a NIC whose receive ring was full")),
      timeouts_(st.counter("system.mbcf.timeouts", "acknowledgement timeouts that led to a handshaked resend")),
      ack_polls_(st.counter("system.mbcf.ack_polls", "timer expiries with no request outstanding: an ack request sent to collect the tail")),
      th1_cuts_(st.counter("system.mbcf.th1_reductions", "times TH1 was lowered for a lack of buffers")),
      faults_(st.counter("system.mbcf.page_faults", "commands that found their target page swapped out")),
      forwards_(st.counter("system.mbcf.multicast_forwards", "multicast copies sent along patterns")),
      invocations_(st.counter("system.mbcf.invocations", "user programs invoked by MBCF_SIGNAL")),
      wakeups_(st.counter("system.mbcf.wakeups", "blocked tasks woken by the scheduling option")),
      blocked_(st.counter("system.mbcf.blocked_syscalls", "system calls that waited for room (TH2)")),
      peer_resets_(st.counter("system.mbcf.peer_resets", "sequence resets after a peer restarted (its Hello)")),
      peers_unresponsive_(st.counter("system.mbcf.peers_unresponsive", "times a peer missed mbcf.max_timeouts timeouts in a row (then probed with back-off)")),
      abandoned_(st.counter("system.mbcf.packets_abandoned", "unacknowledged packets dropped because their peer restarted")),
      hellos_(st.counter("system.mbcf.hellos", "Hellos sent by restarted nodes, repeats included")),
      stale_(st.counter("system.mbcf.stale_frames", "frames from a peer dropped while our restart Hello was unanswered")),
      nic_drops_down_(st.counter("system.mbcf.dropped_while_down", "frames that reached a powered-off node")),
      refused_(st.counter("system.mbcf.requests_refused",
                          "requests refused before anything was sent: an Ltask not in the task's table, a command users may not send, a 4.4 rule the sender can see, or a packet or reply that would not fit a frame")),
      save_full_(st.counter("system.mbcf.save_area_full",
                            "packets for a task waiting for a page-in that found the save area full (mbcf.save_area): not accepted, so Go-back-N brings them again; a local request waits")),
      isr_batch_(st.histogram("system.mbcf.isr_batch", "packets handled per receive interrupt")) {
  gbn::Params gp;
  gp.nodes = c.nodes;
  gp.th1 = c.th1;
  gp.th1_min = c.th1_min;
  gp.th2 = c.th2;
  gp.tx_buffers = c.tx_buffers;
  gp.ack_timeout_us = c.ack_timeout_us;
  gp.resend_timeout_us = c.resend_timeout_us;
  gp.max_backoff_us = c.max_backoff_us;
  gp.max_timeouts = c.max_timeouts;
  const gbn::Counters counts{dup_,      gap_,        resends_,     resend_reqs_,        acks_sent_, timeouts_, ack_polls_,
                             th1_cuts_, peer_resets_, peers_unresponsive_, abandoned_, hellos_,   stale_};
  for (uint32_t i = 0; i < c.nodes; ++i) {
    n_.push_back(std::make_unique<Node>(i, c.page_bytes));
    Node& N = *n_.back();
    N.peers.resize(c.nodes);
    N.memory = std::make_unique<mem::Memory>(("host" + std::to_string(i) + "_memory").c_str(), c.page_bytes);
    use_host_memory(i, N.memory->socket);
    gp.self = i;
    N.gbn_host = std::make_unique<GbnHost>(*this, i);
    N.gbn = std::make_unique<gbn::Endpoint>(gp, counts, *N.gbn_host);
  }
  ether_ = std::make_unique<net::EtherSegment>(cal, c.ether, c.nodes, st, "system.ether", seed);
  ether_->set_rx([this](uint32_t s, std::vector<uint8_t>&& f) { on_frame(s, std::move(f)); });
}

uint64_t EtherSystem::cycles_ps(double cycles) const { return static_cast<uint64_t>(std::llround(cycles * 1e6 / c_.cpu_mhz)); }
uint64_t EtherSystem::copy_ps(uint32_t bytes) const { return static_cast<uint64_t>(std::llround(bytes * 1e6 / c_.copy_mb_s)); }
uint64_t EtherSystem::dma_ps(uint32_t bytes) const {
  const double burst = c_.bus.max_burst, width = c_.bus.width_bytes;
  const double bursts = std::ceil(bytes / burst);
  const double cyc = bursts * (burst / width + c_.bus.overhead_cycles);
  return static_cast<uint64_t>(std::llround(cyc * 1e6 / c_.bus.clock_mhz));
}

// ------------------------------------------------------------------ OS

void EtherSystem::use_host_memory(uint32_t node, mem::TargetSocket& mem) {
  Node& N = *n_[node];
  N.ts.set_frame_source([this, node, &mem](uint32_t f) {
    return mem::frame_by_dmi(*mem.get_base_export().operator->(), f, c_.page_bytes, "node " + std::to_string(node));
  });
  N.memory_target = &mem;
}

Task& EtherSystem::create_task(uint32_t node, uint32_t ptask, uint32_t key) { return n_[node]->ts.create_task(ptask, key); }

void EtherSystem::set_ltask(uint32_t node, uint32_t ptask, uint32_t ltask, uint32_t to_node, uint32_t to_ptask) {
  Task* t = n_[node]->ts.find(ptask);
  Task* d = n_[to_node]->ts.find(to_ptask);
  if (!t || !d) internal_error("set_ltask: no such task");
  t->ltt[ltask] = LtaskEntry{to_node, to_ptask, d->key};
}

void EtherSystem::migrate(uint32_t node, uint32_t ptask, uint32_t to_node, uint32_t new_ptask) {
  TaskSpace& from = n_[node]->ts;
  TaskSpace& to = n_[to_node]->ts;
  std::unique_ptr<Task> t = from.remove(ptask);
  if (!t) internal_error("migrate: no such task");
  task_left(node, ptask);
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
    for (auto& kv : nd->ts.tasks())
      for (auto& e : kv.second->ltt)
        if (e.second.pnode == node && e.second.ptask == ptask) e.second = LtaskEntry{to_node, new_ptask, e.second.key};
}

// ------------------------------------------------------------------ CPU

void EtherSystem::interrupt(uint32_t node, uint64_t dur, std::function<void()> fn) {
  Node& N = *n_[node];
  const uint64_t start = std::max(cal_.now_ps(), N.int_free);
  N.int_free = start + dur;
  N.kernel_ps += dur;
  if (N.user_active && N.user_end > start) {  // the user program is delayed by the interrupt
    N.user_end += dur;
    schedule_user_end(node);
  }
  cal_.at(N.int_free, std::move(fn));
}

// (Re)schedules the end of the user work; an earlier schedule is left to find itself stale.
void EtherSystem::schedule_user_end(uint32_t node) {
  Node& N = *n_[node];
  const uint64_t ver = ++N.user_ver;
  cal_.at(N.user_end, [this, node, ver] {
    Node& N = *n_[node];
    if (ver != N.user_ver) return;
    N.user_active = false;
    auto k = std::move(N.user_k);
    if (!N.preempted.empty()) {  // the preempted work goes on from where it stopped
      auto [left, pk] = std::move(N.preempted.back());
      N.preempted.pop_back();
      N.user_active = true;
      N.user_end = std::max(cal_.now_ps(), N.int_free) + left;
      N.user_k = std::move(pk);
      schedule_user_end(node);
    }
    k();
  });
}

void EtherSystem::compute(uint32_t node, uint64_t ps, std::function<void()> k) {
  Node& N = *n_[node];
  if (N.user_active) {  // preempt: keep what the current work still needs
    const uint64_t at = std::max(cal_.now_ps(), N.int_free);
    N.preempted.emplace_back(N.user_end > at ? N.user_end - at : 0, std::move(N.user_k));
  }
  N.user_active = true;
  N.user_end = std::max(cal_.now_ps(), N.int_free) + ps;
  N.user_k = std::move(k);
  schedule_user_end(node);
}

void EtherSystem::poll(uint32_t node, std::function<bool()> pred, std::function<void()> k) {
  if (pred()) {
    compute(node, cycles_ps(c_.poll_cycles), std::move(k));
    return;
  }
  n_[node]->pollers.emplace_back(std::move(pred), std::move(k));
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

void EtherSystem::run_pollers(uint32_t node, uint64_t at) {
  Node& N = *n_[node];
  for (size_t i = 0; i < N.pollers.size();) {
    if (N.pollers[i].first()) {
      auto k = std::move(N.pollers[i].second);
      N.pollers.erase(N.pollers.begin() + static_cast<long>(i));
      // The poll loop notices on its next iteration.
      cal_.at(at + cycles_ps(c_.poll_cycles), std::move(k));
    } else {
      ++i;
    }
  }
}

void EtherSystem::lw_syscall(uint32_t node, std::function<void()> fn) {
  compute(node, cycles_ps(c_.lw_syscall_cycles), [this, node, fn = std::move(fn)]() mutable { nic_quiesce(node, std::move(fn)); });
}

void EtherSystem::set_program(uint32_t node, uint32_t ptask, uint32_t pc, Program p) {
  n_[node]->programs[{ptask, pc}] = std::move(p);
}

uint64_t EtherSystem::host_busy_ps(uint32_t node) const { return n_[node]->kernel_ps; }

// ------------------------------------------------------------------ system call

bool EtherSystem::build_request(uint32_t node, uint32_t ptask, const Request& r, Built& b) const {
  const Task* t = n_[node]->ts.find(ptask);
  if (!t || r.cmds.empty()) return false;
  auto it = t->ltt.find(r.ltask);
  if (it == t->ltt.end()) return false;
  if (r.cmds.size() > 1)
    for (const Command& c : r.cmds)
      if (is_atomic(c.cmd)) return false;
  for (const Command& c : r.cmds)
    if (!is_user_command(c.cmd)) return false;
  Packet& p = b.packet;
  p.src_pnode = node;
  p.src_ptask = ptask;
  p.src_key = t->key;
  p.dst_ptask = it->second.ptask;
  p.dst_key = it->second.key;
  p.cmds = r.cmds;
  if (r.src_laddr != kNoAddr) {
    // The payload is in the requester's memory: it must be there, readable and present (a
    // page-in is the caller's business, not the call's).
    if (r.cmds.size() != 1) return false;
    std::vector<uint8_t>& d = p.cmds[0].data;
    bool present = false;
    if (!d.empty()) {
      if (n_[node]->ts.check(*t, r.src_laddr, static_cast<uint32_t>(d.size()), kPermRead, &present) != ViolationCode::None || !present)
        return false;
      n_[node]->ts.read(*t, r.src_laddr, d.data(), static_cast<uint32_t>(d.size()));
    }
  }
  if (!encodable(p)) return false;
  const uint32_t bytes = packet_bytes(p);
  // The request and the reply it asks for must fit a frame (4.4), with what the NIC adds to
  // every frame (a sealed frame, crypto.h).
  if (bytes + frame_overhead_ > kMaxPacketBytes) return false;
  if (reply_packet_bytes(p.cmds) + frame_overhead_ > kMaxPacketBytes) return false;
  b.dst = it->second.pnode;
  b.wire_bytes = bytes;
  b.data = 0;
  for (const Command& c : p.cmds) b.data += static_cast<uint32_t>(c.data.size());
  return true;
}

bool EtherSystem::syscall(uint32_t node, uint32_t ptask, const Request& r, std::function<void()> k) {
  if (!n_[node]->up) return false;  // a node without power runs no program
  Built b;
  if (!build_request(node, ptask, r, b)) {
    refused_.inc();
    return false;
  }
  issue(node, ptask, r, std::move(b), std::move(k));
  return true;
}

void EtherSystem::count_emb_requests(uint32_t node, const Packet& p) {
  Task* t = n_[node]->ts.find(p.src_ptask);
  for (const Command& c : p.cmds)
    if (c.opt.emb && t) ++t->emb_requests[c.opt.emb_colour & 15];
}

void EtherSystem::submit(uint32_t node, uint32_t dst, Packet p) {
  if (n_[node]->requests_in_flight) --n_[node]->requests_in_flight;
  request_numbered(node);
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

void EtherSystem::issue(uint32_t node, uint32_t, const Request&, Built b, std::function<void()> k) {
  Node& N = *n_[node];
  const uint32_t dst = b.dst, data = b.data, wire_bytes = b.wire_bytes;
  Packet& p = b.packet;
  uint64_t cost = cycles_ps(c_.syscall_cycles + (p.cmds.size() - 1) * c_.int_command_cycles);
  // Kernel construction copies the user's data once into the NIC-DMA buffer; user
  // construction builds the body in user space first, and the kernel copies the whole packet.
  cost += c_.user_construction ? cycles_ps(c_.user_build_cycles) + copy_ps(data) + copy_ps(wire_bytes) : copy_ps(data);
  // The request counts for its barrier colour once issued, whenever it leaves (the user is
  // held in the system call until then anyway).
  count_emb_requests(node, p);
  ++N.requests_in_flight;
  auto go = [this, node, dst, p, k]() mutable {
    submit(node, dst, std::move(p));
    k();
  };
  if (dst == node && save_area_full(node, p)) {  // to a task of our own whose save area is full
    save_full_.inc();
    N.save_waiters.push_back([this, node, cost, go]() mutable {
      n_[node]->kernel_ps += cost;
      compute(node, cost, go);
    });
    return;
  }
  if (must_wait(node, dst, p)) {
    blocked_.inc();
    // Released when there is room, one at a time: the call pays for itself on the CPU, its
    // packet is numbered, and only then may the next waiting call go (order and window kept).
    N.peers[dst].blocked.push_back([this, node, dst, cost, go]() mutable {
      n_[node]->kernel_ps += cost;
      n_[node]->peers[dst].releasing = true;
      compute(node, cost, [this, node, dst, go]() mutable {
        n_[node]->peers[dst].releasing = false;
        go();
        release_blocked(node, dst);
      });
    });
    return;
  }
  N.kernel_ps += cost;
  compute(node, cost, go);
}

// ------------------------------------------------------------------ transmit

void EtherSystem::nic_send(uint32_t node, uint32_t dst, const Packet& p0) {
  Node& N = *n_[node];
  if (!N.up) return;
  if (dst == node) {  // to oneself: the kernel short-cuts the wire
    Packet q = p0;
    cal_.after(0, [this, node, q] {
      if (!n_[node]->up) return;
      if (save_area_full(node, q)) {  // waits for room after the page-in, like a remote one resent
        save_full_.inc();
        n_[node]->save_waiters.push_back([this, node, q] { nic_send(node, node, q); });
        return;
      }
      // Processed as an arrived packet is, with its cost; what it sends back (a status reply,
      // multicast copies, an invocation) goes out when that work is done.
      step_cost_ = 0;
      reply_peer_ = node;
      replied_ = false;
      accept(node, q);
      if (mutant::on(mutant::Id::LocalRepliesHeld)) return;
      auto out = std::move(outbox_);
      outbox_.clear();
      protocol_work(node, step_cost_, [this, node, out = std::move(out)] {
        for (const auto& f : out) f();
        run_pollers(node, cal_.now_ps());
      });
    });
    return;
  }
  Packet p = p0;
  p.dst_mac = mac_of(dst);
  p.src_mac = mac_of(node);
  p.src_pnode = p.ctrl_p & kForwarded ? p.src_pnode : node;
  if (!(p.ctrl_p & kHello)) p.recv_p = N.gbn->arrived(dst);  // (a HelloAck's says where our numbering went on)
  std::vector<uint8_t> bytes;
  if (!encode(p, bytes)) internal_error("an MBCF packet the kernel built does not encode");
  sent_.inc();
  if (tx_hook_) tx_hook_(node, dst, p);
  const uint32_t inc = N.incarnation;
  const bool sequenced = (p.ctrl_p & kSequenced) != 0;
  nic_transmit(node, dst, std::move(bytes), [this, node, dst, inc, sequenced](std::vector<uint8_t>&& b) {
    if (!n_[node]->up || n_[node]->incarnation != inc) return;
    if (b.empty()) {  // the NIC dropped it
      if (c_.nic_tx_streams) stream_next(node);
      if (sequenced) n_[node]->gbn->left(dst);
      return;
    }
    ether_->send(node, dst, std::move(b), [this, node, dst, inc, sequenced](bool) {
      if (!n_[node]->up || n_[node]->incarnation != inc) return;
      if (c_.nic_tx_streams) stream_next(node);
      tx_done(node);
      // The acknowledgement timer runs from when a frame has left the MAC, not from the
      // request: on a slow or busy medium a frame can wait in the transmit queue for longer
      // than the timeout (64 full frames are 79 ms of 10BASE-T).
      if (sequenced) n_[node]->gbn->left(dst);
    });
  });
}

void EtherSystem::send_sequenced(uint32_t node, uint32_t peer, Packet p) {
  if (peer == node) nic_send(node, peer, p);
  else n_[node]->gbn->submit(peer, std::move(p));
}

// ------------------------------------------------------------------ Go-back-N's actions

void EtherSystem::GbnHost::send(uint32_t peer, const Packet& p) { s_.nic_send(node_, peer, p); }

void EtherSystem::GbnHost::set_timer(gbn::Timer t, uint32_t peer, double us, uint64_t tag) {
  EtherSystem& s = s_;
  const uint32_t node = node_, inc = s.n_[node]->incarnation;
  const uint64_t ps = static_cast<uint64_t>(us * 1e6);
  switch (t) {
    case gbn::Timer::Ack:
      s.cal_.after(ps, [&s, node, peer, tag, inc] {
        Node& N = *s.n_[node];
        if (!N.up || N.incarnation != inc || !N.gbn->ack_timer_live(peer, tag)) return;
        const uint64_t still = s.cal_.now_ps() - N.peers[peer].last_progress;
        if (s.c_.stuck_us > 0 && still > s.c_.stuck_us * 1e6 && s.failure().empty()) {
          // The network stuck check reports; the protocol goes on as before (a run stops on it).
          char buf[200];
          std::snprintf(buf, sizeof buf, "network stuck: node %u -> %u has %zu packets unacknowledged and no acknowledgement progress for %.0f us (mbcf.stuck_us %g)",
                        node, peer, N.gbn->unacked(peer).size(), still / 1e6, s.c_.stuck_us);
          s.fail(buf);
        }
        N.gbn->timeout(peer);
      });
      return;
    case gbn::Timer::Resend:
      s.cal_.after(ps, [&s, node, peer, tag, inc] {
        Node& N = *s.n_[node];
        if (N.up && N.incarnation == inc) N.gbn->resend_timer(peer, static_cast<uint8_t>(tag));
      });
      return;
    case gbn::Timer::Hello:
      s.cal_.after(ps, [&s, node, peer, inc] {
        Node& N = *s.n_[node];
        if (N.up && N.incarnation == inc) N.gbn->hello_timer(peer);
      });
      return;
  }
}

void EtherSystem::GbnHost::progress(uint32_t peer) { s_.n_[node_]->peers[peer].last_progress = s_.cal_.now_ps(); }
void EtherSystem::GbnHost::arrived(uint32_t peer, uint8_t count) { s_.arrived_set(node_, peer, count); }
void EtherSystem::GbnHost::release(uint32_t peer) { s_.release_blocked(node_, peer); }

// Requests waiting for room go out, oldest first, while the window has room.
void EtherSystem::release_blocked(uint32_t node, uint32_t peer) {
  Peer& P = n_[node]->peers[peer];
  while (!P.blocked.empty() && !P.releasing && !n_[node]->gbn->window_full(peer)) {
    auto f = std::move(P.blocked.front());
    P.blocked.pop_front();
    f();
  }
}

// ------------------------------------------------------------------ receive

void EtherSystem::on_frame(uint32_t node, std::vector<uint8_t>&& frame) {
  Node& N = *n_[node];
  if (!N.up) {
    nic_drops_down_.inc();
    return;
  }
  if (N.ring_used >= c_.rx_ring) {
    ring_drops_.inc();
    return;
  }
  ++N.ring_used;
  const uint32_t inc = N.incarnation;
  nic_receive(node, std::move(frame), [this, node, inc](Rx* f) {
    Node& N = *n_[node];
    if (!N.up || N.incarnation != inc) return;
    if (!f) {  // the NIC consumed or rejected it
      --N.ring_used;
      return;
    }
    N.ring.push_back(std::move(*f));
    if (!N.in_isr) {
      N.in_isr = true;
      N.batch = 0;
      protocol_work(node, rx_entry_ps(node), [this, node] { isr_step(node); });
    }
  });
}

// ------------------------------------------------------------------ the executor (MBCF/Ether)

void EtherSystem::nic_transmit(uint32_t node, uint32_t, std::vector<uint8_t>&& frame, std::function<void(std::vector<uint8_t>&&)> in_mac) {
  if (c_.nic_tx_streams) {
    Node& N = *n_[node];
    N.tx_stream.emplace_back(std::move(frame), std::move(in_mac));
    if (!N.tx_streaming) stream_next(node);
    return;
  }
  const uint64_t end = tx_ready_ps(node, static_cast<uint32_t>(frame.size()));
  cal_.at(end, [k = std::move(in_mac), f = std::move(frame)]() mutable { k(std::move(f)); });
}

void EtherSystem::nic_receive(uint32_t node, std::vector<uint8_t>&& frame, RxReady ready) {
  const uint64_t t = rx_ready_ps(node, static_cast<uint32_t>(frame.size()));
  cal_.at(t, [k = std::move(ready), f = std::move(frame)]() mutable {
    Rx r{std::move(f), 0};
    k(&r);
  });
}

// Its turnaround over, the frame goes into the MAC, the DMA keeping pace with the wire; the
// next waits until this one has left (the MAC's completion, or a frame given up).
void EtherSystem::stream_next(uint32_t node) {
  Node& N = *n_[node];
  N.tx_streaming = !N.tx_stream.empty();
  if (!N.tx_streaming) return;
  auto next = std::move(N.tx_stream.front());
  N.tx_stream.pop_front();
  cal_.after(static_cast<uint64_t>(c_.nic_tx_latency_ns * 1000), [this, node, epoch = N.tx_epoch, f = std::move(next)]() mutable {
    if (n_[node]->tx_epoch != epoch) return;  // the power went: the NIC forgot it
    f.second(std::move(f.first));
  });
}

uint64_t EtherSystem::tx_ready_ps(uint32_t node, uint32_t bytes) {
  Node& N = *n_[node];
  // One DMA engine fetches a frame's descriptor, then its data: a frame kicked while the one
  // before is still in the engine waits for it, then for its own fetch. A NIC that prefetches
  // descriptors fetches the next one during the DMA of the one before.
  const uint64_t lat = static_cast<uint64_t>(c_.nic_tx_latency_ns * 1000);
  const uint64_t t0 = c_.nic_tx_prefetch ? std::max(cal_.now_ps() + lat, N.tx_free) : std::max(cal_.now_ps(), N.tx_free) + lat;
  const uint64_t start = std::max(t0, N.bus_free);
  const uint64_t end = start + dma_ps(std::max<uint32_t>(bytes, 60));
  N.bus_free = end;
  N.tx_free = end;
  return end;
}

void EtherSystem::tx_done(uint32_t node) {
  if (c_.tx_done_cycles > 0) interrupt(node, cycles_ps(c_.tx_done_cycles), [] {});
}

uint64_t EtherSystem::rx_ready_ps(uint32_t node, uint32_t len) {
  Node& N = *n_[node];
  const uint64_t now = cal_.now_ps();
  uint64_t end;
  if (c_.nic_rx_cut_through) {  // DMA overlaps reception; it ends no earlier than the frame
    const uint64_t wire = ether_->slot_ps(len) - net::EtherSegment::kIfg * 8 * ether_->bit_ps();
    end = std::max(now, std::max(now - std::min(now, wire), N.bus_free) + dma_ps(len));
  } else {
    end = std::max(now, N.bus_free) + dma_ps(len);
  }
  N.bus_free = end;
  return end + static_cast<uint64_t>(c_.nic_rx_latency_ns * 1000);
}

uint64_t EtherSystem::rx_entry_ps(uint32_t) { return cycles_ps(c_.int_entry_cycles); }

uint64_t EtherSystem::packet_cost(uint32_t node, const Packet& p, ExecResult& r) {
  if (p.ctrl_p & kAckOnly) return proto_ps(c_.ack_cycles);
  double cyc = c_.int_packet_cycles + (p.cmds.size() > 1 ? (p.cmds.size() - 1) * c_.int_command_cycles : 0);
  uint64_t ps = data_move_ps(node, p, r);
  for (const Command& c : p.cmds)
    if (is_atomic(c.cmd)) cyc += c_.atomic_word_cycles * (c.length / 4);
  if (!r.replies.empty() || r.outcome != ExecResult::Outcome::Done) cyc += c_.reply_cycles;
  cyc += c_.reply_cycles * r.forwards.size();
  return proto_ps(cyc) + ps;
}

void EtherSystem::isr_step(uint32_t node) {
  Node& N = *n_[node];
  if (!N.up) return;
  if (N.ring.empty()) {
    N.in_isr = false;
    rx_idle(node);
    isr_batch_.sample(N.batch);
    run_pollers(node, cal_.now_ps());
    return;
  }
  std::vector<uint8_t> f = rx_take(node, N.ring.front());
  N.ring.pop_front();
  --N.ring_used;
  received_.inc();
  ++N.batch;
  Packet p;
  if (decode(f.data(), f.size(), p) != DecodeError::None || p.src_pnode >= n_.size() || p.src_pnode == node) {
    malformed_.inc();
    protocol_work(node, proto_ps(c_.ack_cycles), [this, node] { isr_step(node); });
    return;
  }
  const uint32_t s = p.src_pnode;
  // Work is done now; its cost delays the next step (and what it sends).
  step_cost_ = 0;
  // Go-back-N takes the protocol bytes: a Hello, an acknowledgement or a request for one ends
  // there; the sender's side collects what RECV_P acknowledges.
  if (!N.gbn->frame(s, p.ctrl_p, p.end_p, p.recv_p)) {
    protocol_work(node, proto_ps(c_.ack_cycles), [this, node] { isr_step(node); });
    return;
  }
  // The routine's time the NIC's order-checking unit spares it (sequenced packets).
  uint64_t saved = 0;
  auto less_saved = [&saved](uint64_t ps) { return ps - std::min(ps, saved); };
  if (p.ctrl_p & kSequenced) {
    const Order o = order_of(node, s, p.end_p, &saved);
    // An in-order packet for a task whose save area is full is not accepted: the sender's
    // Go-back-N brings it again.
    const bool room = o != Order::InOrder || !save_area_full(node, p);
    if (!N.gbn->data(s, o, p.end_p, room)) {
      if (!room) save_full_.inc();
      protocol_work(node, less_saved(proto_ps(c_.ack_cycles)), [this, node] { isr_step(node); });
      return;
    }
    ++N.peers[s].delivered;
  } else if (save_area_full(node, p)) {  // no flow control: lost, as with a full receive ring
    save_full_.inc();
    protocol_work(node, proto_ps(c_.ack_cycles), [this, node] { isr_step(node); });
    return;
  }
  if (accept_hook_) accept_hook_(s, node, p);
  reply_peer_ = s;
  replied_ = false;
  accept(node, p);
  // An ack request is answered by any packet that goes back with RECV_P; a separate
  // acknowledgement only when the command itself sends nothing back now.
  if ((p.ctrl_p & kSequenced) && (p.ctrl_p & kAckReq) && !replied_) N.gbn->unanswered(s);
  const uint64_t cost = less_saved(step_cost_);
  auto out = std::move(outbox_);
  outbox_.clear();
  protocol_work(node, cost, [this, node, out = std::move(out)] {
    for (const auto& f : out) f();
    isr_step(node);
  });
}

EtherSystem::Order EtherSystem::firmware_order(uint32_t node, uint32_t src, uint8_t end_p) const {
  return n_[node]->gbn->classify(src, end_p);
}

EtherSystem::Order EtherSystem::order_of(uint32_t node, uint32_t src, uint8_t end_p, uint64_t* saved) {
  *saved = 0;
  return firmware_order(node, src, end_p);
}

namespace {
// A multicast acknowledgement between kernels: kernel work, never a task's command.
bool is_kernel_ack(const Packet& p) { return p.cmds.size() == 1 && p.cmds[0].cmd == Cmd::Ack; }
}  // namespace

void EtherSystem::accept(uint32_t node, const Packet& p) {
  if (is_kernel_ack(p)) {
    step_cost_ += proto_ps(c_.ack_cycles);
    outbox_.push_back([this, node, c = p.cmds[0]] { on_ack(node, c); });
    return;
  }
  deliver_to_task(node, p);
}

uint32_t EtherSystem::reply_node(const Packet& p) const { return p.ctrl_p & kForwarded ? p.reserved : p.src_pnode; }

void EtherSystem::deliver_to_task(uint32_t node, const Packet& p) {
  Node& N = *n_[node];
  Task* t = N.ts.find(p.dst_ptask);
  if (!t) {
    if (const Moved* m = N.ts.moved(p.dst_ptask)) {  // migrated: forward to the new home
      Packet q = p;
      q.dst_ptask = m->ptask;
      if (!(q.ctrl_p & kForwarded)) q.reserved = static_cast<uint8_t>(p.src_pnode);
      q.ctrl_p = kForwarded;
      q.src_pnode = node;
      step_cost_ += proto_ps(c_.int_packet_cycles + c_.reply_cycles);
      forwards_.inc();
      const uint32_t to = m->pnode;
      outbox_.push_back([this, node, to, q] {
        Packet r = q;
        send_sequenced(node, to, std::move(r));
      });
      return;
    }
  }
  if (t && t->waiting_page) {  // 3.4.2: later commands for a faulting task wait in order
    std::vector<uint8_t> b;
    Packet q = p;
    q.ctrl_p &= kForwarded;
    encode(q, b);
    t->saved.push_back(std::move(b));
    check_save_area(node);
    step_cost_ += proto_ps(c_.int_packet_cycles);
    return;
  }
  ExecResult r;
  {
    TaskSpace::Via via(N.ts, nic_frames(node), nic_writes(node));
    r = execute(N.ts, p, kMaxPacketBytes - frame_overhead_);
  }
  if (r.outcome == ExecResult::Outcome::PageFault) {
    faults_.inc();
    t->waiting_page = true;
    std::vector<uint8_t> b;
    Packet q = p;
    q.ctrl_p &= kForwarded;
    encode(q, b);
    t->saved.push_front(std::move(b));
    step_cost_ += proto_ps(c_.int_packet_cycles);
    const uint32_t ptask = t->ptask, page = r.fault_page;
    cal_.after(static_cast<uint64_t>(c_.page_in_us * 1e6), [this, node, ptask, page] {
      Task* t = n_[node]->ts.find(ptask);
      if (!t) return;
      auto it = t->pages.find(page);
      if (it != t->pages.end()) it->second.present = true;
      page_in_done(node, ptask);
    });
    return;
  }
  step_cost_ += packet_cost(node, p, r);
  after_exec(node, p, r);
}

void EtherSystem::page_in_done(uint32_t node, uint32_t ptask) {
  Task* t = n_[node]->ts.find(ptask);
  if (!t) return;
  t->waiting_page = false;
  // Everything saved runs now, in order; a new fault stops the replay and waits again.
  std::deque<std::vector<uint8_t>> saved;
  saved.swap(t->saved);
  while (!saved.empty()) {
    Packet p;
    decode(saved.front().data(), saved.front().size(), p);
    saved.pop_front();
    step_cost_ = 0;
    deliver_to_task(node, p);
    auto out = std::move(outbox_);
    outbox_.clear();
    protocol_work(node, step_cost_, [this, node, out = std::move(out)] {
      for (const auto& f : out) f();
      run_pollers(node, cal_.now_ps());
    });
    t = n_[node]->ts.find(ptask);
    if (t && t->waiting_page) {
      for (auto& b : saved) t->saved.push_back(std::move(b));
      break;
    }
  }
  run_save_waiters(node);
}

uint32_t EtherSystem::saved_packets(uint32_t node) const {
  uint32_t n = 0;
  for (const auto& [id, t] : n_[node]->ts.tasks()) n += static_cast<uint32_t>(t->saved.size());
  return n;
}

bool EtherSystem::save_area_full(uint32_t node, const Packet& p) const {
  if (mutant::on(mutant::Id::SaveAreaUnbounded)) return false;
  if (is_kernel_ack(p)) return false;  // never saved
  const Task* t = n_[node]->ts.find(p.dst_ptask);
  return t && t->waiting_page && saved_packets(node) >= c_.save_area;
}

// The buffer bound, checked online: the area holds at most mbcf.save_area packets besides the
// one that faulted for each waiting task. A breach stops the run (exit 2) with a dump.
void EtherSystem::check_save_area(uint32_t node) {
  uint32_t waiting = 0;
  for (const auto& [id, t] : n_[node]->ts.tasks()) waiting += t->waiting_page;
  const uint32_t held = saved_packets(node);
  if (held > c_.save_area + waiting)
    fail("buffer bound: node " + std::to_string(node) + "'s save area holds " + std::to_string(held) + " packets, beyond mbcf.save_area " +
         std::to_string(c_.save_area) + " and one faulting packet for each of the " + std::to_string(waiting) + " tasks waiting for a page-in");
}

// Room was made: every waiter tries again, in order (one that still finds no room waits again).
void EtherSystem::run_save_waiters(uint32_t node) {
  Node& N = *n_[node];
  std::deque<std::function<void()>> w;
  w.swap(N.save_waiters);
  for (auto& f : w) f();
}

void EtherSystem::after_exec(uint32_t node, const Packet& p, const ExecResult& r) {
  const bool no_flow = !p.cmds.empty() && p.cmds[0].opt.no_flow_control;
  const uint32_t rn = reply_node(p);
  if (r.outcome != ExecResult::Outcome::Done) {
    violations_.inc();
    // REPLY_STATUS: a violation message instead of the status reply (4.2).
    for (size_t i = 0; i < p.cmds.size(); ++i) {
      const Command& c = p.cmds[i];
      if (c.opt.reply == ReplyMode::None && !replies_with_data(c.cmd)) continue;
      if (c.cmd == Cmd::Reply || c.cmd == Cmd::Violation) break;
      Command v;
      v.cmd = Cmd::Violation;
      v.status_laddr = c.opt.reply != ReplyMode::None ? c.status_laddr : kNoAddr;
      v.status = static_cast<uint32_t>(r.violation);
      v.aux = r.violation_index;
      note_reply(rn);
      outbox_.push_back([this, node, rn, p, v, no_flow] {
        send_kernel_packet(node, rn, p.src_ptask, p.src_key, {v}, no_flow);
      });
      break;
    }
    return;
  }
  if (r.woke) wakeups_.inc();
  const Command& c0 = p.cmds[0];
  if (is_multicast(c0.cmd)) {
    const bool needs_ack = c0.opt.reply != ReplyMode::None || c0.opt.emb;
    const bool root = c0.origin == 0;
    if (!r.forwards.empty()) {
      Node& N = *n_[node];
      const uint32_t id = N.next_origin++;
      if (needs_ack) {
        Combine& cb = N.combines[id];
        cb.pending = static_cast<uint32_t>(r.forwards.size());
        cb.root = root;
        cb.parent_node = rn;
        cb.parent_origin = c0.origin;
        cb.reply_to = p;
        if (r.deferred) cb.deferred = *r.deferred;
      }
      for (const Forward& f : r.forwards) {
        Command fc = f.cmd;
        fc.origin = id;
        forwards_.inc();
        outbox_.push_back([this, node, f, fc, no_flow] {
          send_kernel_packet(node, f.to.pnode, f.to.ptask, f.to.key, {fc}, no_flow);
        });
      }
      return;
    }
    if (!root) {  // a leaf page: acknowledge to the parent, which combines
      if (needs_ack) {
        Command a;
        a.cmd = Cmd::Ack;
        a.origin = c0.origin;
        a.aux = 1;
        note_reply(rn);
        outbox_.push_back([this, node, rn, a, no_flow] { send_kernel_packet(node, rn, kKernelPtask, 0, {a}, no_flow); });
      }
      return;
    }
  }
  if (!r.replies.empty()) note_reply(rn);
  if (!r.replies.empty())
    outbox_.push_back([this, node, rn, p, reps = r.replies, h = r.nic_reply, no_flow]() mutable {
      if (h) nic_reply_data(node, h, reps);
      send_kernel_packet(node, rn, p.src_ptask, p.src_key, reps, no_flow);
    });
  for (const Invocation& iv : r.invocations) outbox_.push_back([this, node, iv] { run_invocation(node, iv); });
}

void EtherSystem::send_kernel_packet(uint32_t node, uint32_t dst_node, uint32_t dst_ptask, uint32_t dst_key,
                                     std::vector<Command> cmds, bool no_flow) {
  Packet p;
  p.src_pnode = node;
  p.src_ptask = kKernelPtask;
  p.dst_ptask = dst_ptask;
  p.dst_key = dst_key;
  p.cmds = std::move(cmds);
  if (no_flow) {
    p.ctrl_p = kNoFlow;
    nic_send(node, dst_node, p);
  } else {
    send_sequenced(node, dst_node, std::move(p));  // kernel packets never block on TH2
  }
}

void EtherSystem::on_ack(uint32_t node, const Command& c) {
  Node& N = *n_[node];
  auto it = N.combines.find(c.origin);
  if (it == N.combines.end()) return;
  it->second.pages += c.aux;
  if (--it->second.pending == 0) finish_combine(node, c.origin);
}

void EtherSystem::finish_combine(uint32_t node, uint32_t origin) {
  Node& N = *n_[node];
  Combine cb = std::move(N.combines[origin]);
  N.combines.erase(origin);
  const bool no_flow = cb.reply_to.cmds[0].opt.no_flow_control;
  if (cb.root) {
    cb.deferred.aux = cb.pages;  // how many pages of the pattern were reached
    send_kernel_packet(node, reply_node(cb.reply_to), cb.reply_to.src_ptask, cb.reply_to.src_key, {cb.deferred}, no_flow);
  } else {
    Command a;
    a.cmd = Cmd::Ack;
    a.origin = cb.parent_origin;
    a.aux = cb.pages;
    send_kernel_packet(node, cb.parent_node, kKernelPtask, 0, {a}, no_flow);
  }
}

void EtherSystem::run_invocation(uint32_t node, const Invocation& iv) {
  invocations_.inc();
  const double cyc = c_.invoke_cycles * (iv.kind == Invocation::DspByUls ? 2 : 1);
  const uint32_t pc = iv.kind == Invocation::DspByUls ? iv.dsp_pc : iv.pc;
  const uint64_t msg = static_cast<uint64_t>(iv.ptask) << 32 | iv.signal_laddr;
  host_upcall(node, msg, [this, node, iv, cyc, pc] {
    Node& N = *n_[node];
    auto it = N.programs.find({iv.ptask, pc});
    auto finish = [this, node, iv] {
      Task* t = n_[node]->ts.find(iv.ptask);
      if (t) signal_returned(n_[node]->ts, *t, iv.signal_laddr);
      run_pollers(node, cal_.now_ps());
    };
    if (it == N.programs.end()) {
      compute(node, cycles_ps(cyc), finish);
      return;
    }
    Program prog = it->second;
    compute(node, cycles_ps(cyc), [iv, prog, finish] { prog(iv, finish); });
  });
}

// ------------------------------------------------------------------ faults

void EtherSystem::power_off(uint32_t node) {
  Node& N = *n_[node];
  N.up = false;
  N.requests_in_flight = 0;  // what the host or NIC was still building is lost with the power
  // So is the user program: its computation, what it preempted and what it polled for never
  // continue (a program on the restarted node is started anew by the workload).
  N.user_active = false;
  N.user_k = nullptr;
  N.preempted.clear();
  N.pollers.clear();
  N.save_waiters.clear();  // calls that waited for the save area die with their programs
  ++N.user_ver;
  nic_power_off(node);
  N.tx_stream.clear();
  N.tx_streaming = false;
  ++N.tx_epoch;
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
  Task* t = n_[node]->ts.find(ptask);
  if (!t) return;
  n_[node]->ts.set_present(*t, laddr, false);
  page_unmapped(node, ptask, laddr);
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

std::string EtherSystem::dump() const {
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
