// MBCF/Ether's kernel protocol path (6.1): packets to the NIC and the wire, Go-back-N's actions
// (gbn.h decides, this carries out), frames from the wire, the receive interrupt routine and the
// executor of MBCF commands with its completions (acknowledgements, replies, combining,
// invocations, page faults and the save area).
#include "models/mbcf/ether_system.h"

#include "models/core/mutant.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "models/core/error.h"
#include "models/core/timeline.h"

namespace mbpsim::mbcf {

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
      ex(node).work(step_cost_, [this, node, out = std::move(out)] {
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
  if (p.tl_flow && (p.ctrl_p & kSequenced)) tl_wire_[{node, dst, p.end_p}] = p.tl_flow;
  const uint32_t inc = N.incarnation;
  const bool sequenced = (p.ctrl_p & kSequenced) != 0;
  // The acknowledgement timer runs from when a frame has left the MAC (or the NIC gave it up),
  // not from the request: on a slow or busy medium a frame can wait in the transmit queue for
  // longer than the timeout (64 full frames are 79 ms of 10BASE-T).
  N.nic->transmit(dst, std::move(bytes), [this, node, dst, inc, sequenced](bool) {
    if (!n_[node]->up || n_[node]->incarnation != inc) return;
    if (sequenced) n_[node]->gbn->left(dst);
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
void EtherSystem::GbnHost::arrived(uint32_t peer, uint8_t count) { s_.ex(node_).arrived_set(peer, count); }
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
  N.nic->receive(std::move(frame), [this, node, inc](Rx* f) {
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
      ex(node).work(ex(node).rx_entry_ps(), [this, node] { isr_step(node); });
    }
  });
}

// ------------------------------------------------------------------ the receive routine's work

uint64_t EtherSystem::packet_cost(uint32_t node, const Packet& p, ExecResult& r) {
  if (p.ctrl_p & kAckOnly) return ex(node).proto_ps(c_.ack_cycles);
  double cyc = c_.int_packet_cycles + (p.cmds.size() > 1 ? (p.cmds.size() - 1) * c_.int_command_cycles : 0);
  uint64_t ps = ex(node).data_move_ps(p, r);
  for (const Command& c : p.cmds)
    if (is_atomic(c.cmd)) cyc += c_.atomic_word_cycles * (c.length / 4);
  if (!r.replies.empty() || r.outcome != ExecResult::Outcome::Done) cyc += c_.reply_cycles;
  cyc += c_.reply_cycles * r.forwards.size();
  if (r.structures) {
    const uint64_t sp = ex(node).proto_ps(c_.int_struct_cycles * r.structures);
    structures_.inc(r.structures);
    structure_ps_.inc(sp);
    structure_ps_sum_ += sp;
    ps += sp;
  }
  return ex(node).proto_ps(cyc) + ps;
}

void EtherSystem::isr_step(uint32_t node) {
  Node& N = *n_[node];
  if (!N.up) return;
  if (N.ring.empty()) {
    N.in_isr = false;
    N.nic->rx_idle();
    isr_batch_.sample(N.batch);
    run_pollers(node, cal_.now_ps());
    return;
  }
  std::vector<uint8_t> f = N.nic->take(N.ring.front());
  N.ring.pop_front();
  --N.ring_used;
  if (!protocols_.empty() && f.size() >= 14) {  // the driver's demultiplexing by EtherType
    const uint16_t type = static_cast<uint16_t>(f[12] << 8 | f[13]);
    for (auto& [t, h] : protocols_)
      if (t == type) {
        ++N.batch;
        ex(node).work(h(node, std::move(f)), [this, node] { isr_step(node); });
        return;
      }
  }
  received_.inc();
  ++N.batch;
  Packet p;
  if (decode(f.data(), f.size(), p) != DecodeError::None || p.src_pnode >= n_.size() || p.src_pnode == node) {
    malformed_.inc();
    ex(node).work(ex(node).proto_ps(c_.ack_cycles), [this, node] { isr_step(node); });
    return;
  }
  const uint32_t s = p.src_pnode;
  // Work is done now; its cost delays the next step (and what it sends).
  step_cost_ = 0;
  // Go-back-N takes the protocol bytes: a Hello, an acknowledgement or a request for one ends
  // there; the sender's side collects what RECV_P acknowledges.
  if (!N.gbn->frame(s, p.ctrl_p, p.end_p, p.recv_p)) {
    ex(node).work(ex(node).proto_ps(c_.ack_cycles), [this, node] { isr_step(node); });
    return;
  }
  // The routine's time the NIC's order-checking unit spares it (sequenced packets).
  uint64_t saved = 0;
  auto less_saved = [&saved](uint64_t ps) { return ps - std::min(ps, saved); };
  if (p.ctrl_p & kSequenced) {
    // The routine compares END_P with its count of packets arrived from `s` (modulo 256); an
    // executor with an order-checking unit answers from the unit.
    const Order o = ex(node).order_of(s, p.end_p, N.gbn->classify(s, p.end_p), &saved);
    // An in-order packet for a task whose save area is full is not accepted: the sender's
    // Go-back-N brings it again.
    const bool room = o != Order::InOrder || !save_area_full(node, p);
    if (!N.gbn->data(s, o, p.end_p, room)) {
      if (!room) save_full_.inc();
      ex(node).work(less_saved(ex(node).proto_ps(c_.ack_cycles)), [this, node] { isr_step(node); });
      return;
    }
    ++N.peers[s].delivered;
    if (!tl_wire_.empty()) {
      auto it = tl_wire_.find({s, node, p.end_p});
      if (it != tl_wire_.end()) {
        tl_flow_ = it->second;
        tl_wire_.erase(it);
      }
    }
  } else if (save_area_full(node, p)) {  // no flow control: lost, as with a full receive ring
    save_full_.inc();
    ex(node).work(ex(node).proto_ps(c_.ack_cycles), [this, node] { isr_step(node); });
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
  const uint64_t flow = tl_flow_;
  tl_flow_ = 0;
  const bool back = replied_;
  ex(node).work(cost, [this, node, out = std::move(out), flow, cost, back, s, cmd = p.cmds.empty() ? Cmd::Ack : p.cmds[0].cmd] {
    if (flow) trace_receive(node, s, cmd, flow, cost, back);
    tl_flow_ = flow;  // what the routine sends on carries the request's flow
    for (const auto& f : out) f();
    tl_flow_ = 0;
    isr_step(node);
  });
}

// The timeline: the receive routine's work on a packet of a request's flow, the flow's step
// where it sends something back to the requester, else its end.
void EtherSystem::trace_receive(uint32_t node, uint32_t from, Cmd cmd, uint64_t flow, uint64_t cost, bool back) {
  Timeline* tl = timeline();
  if (!tl || ex(node).track_name().empty()) return;
  const int track = tl->track(ex(node).track_name());
  const uint64_t now = cal_.now_ps();
  tl->slice(track, std::string(to_string(cmd)) + " from n" + std::to_string(from), now - std::min(now, cost), now,
            "{\"from\":" + std::to_string(from) + "}");
  auto it = tl_origin_.find(flow);
  const bool at_origin = it == tl_origin_.end() || it->second == node;
  tl->flow(track, kTlFlow, flow, back && !at_origin ? 't' : 'f', now);
  if (!(back && !at_origin) && it != tl_origin_.end()) tl_origin_.erase(it);
}

namespace {
// A multicast acknowledgement between kernels: kernel work, never a task's command.
bool is_kernel_ack(const Packet& p) { return p.cmds.size() == 1 && p.cmds[0].cmd == Cmd::Ack; }
}  // namespace

void EtherSystem::accept(uint32_t node, const Packet& p) {
  if (is_kernel_ack(p)) {
    step_cost_ += ex(node).proto_ps(c_.ack_cycles);
    outbox_.push_back([this, node, c = p.cmds[0]] { on_ack(node, c); });
    return;
  }
  deliver_to_task(node, p);
}

uint32_t EtherSystem::reply_node(const Packet& p) const { return p.ctrl_p & kForwarded ? p.reserved : p.src_pnode; }

void EtherSystem::deliver_to_task(uint32_t node, const Packet& p) {
  Node& N = *n_[node];
  Task* t = N.ts->find(p.dst_ptask);
  if (!t) {
    if (const Moved* m = N.ts->moved(p.dst_ptask)) {  // migrated: forward to the new home
      Packet q = p;
      q.dst_ptask = m->ptask;
      if (!(q.ctrl_p & kForwarded)) q.reserved = static_cast<uint8_t>(p.src_pnode);
      q.ctrl_p = kForwarded;
      q.src_pnode = node;
      step_cost_ += ex(node).proto_ps(c_.int_packet_cycles + c_.reply_cycles);
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
    step_cost_ += ex(node).proto_ps(c_.int_packet_cycles);
    return;
  }
  ExecResult r;
  {
    TaskSpace::Via via(*N.ts, ex(node).frames(), ex(node).writes());
    r = execute(*N.ts, p, kMaxPacketBytes - N.nic->frame_overhead());
  }
  if (r.outcome == ExecResult::Outcome::PageFault) {
    faults_.inc();
    t->waiting_page = true;
    std::vector<uint8_t> b;
    Packet q = p;
    q.ctrl_p &= kForwarded;
    encode(q, b);
    t->saved.push_front(std::move(b));
    step_cost_ += ex(node).proto_ps(c_.int_packet_cycles);
    const uint32_t ptask = t->ptask, page = r.fault_page;
    cal_.after(static_cast<uint64_t>(c_.page_in_us * 1e6), [this, node, ptask, page] {
      Task* t = n_[node]->ts->find(ptask);
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
  Task* t = n_[node]->ts->find(ptask);
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
    ex(node).work(step_cost_, [this, node, out = std::move(out)] {
      for (const auto& f : out) f();
      run_pollers(node, cal_.now_ps());
    });
    t = n_[node]->ts->find(ptask);
    if (t && t->waiting_page) {
      for (auto& b : saved) t->saved.push_back(std::move(b));
      break;
    }
  }
  run_save_waiters(node);
}

uint32_t EtherSystem::saved_packets(uint32_t node) const {
  uint32_t n = 0;
  for (const auto& [id, t] : n_[node]->ts->tasks()) n += static_cast<uint32_t>(t->saved.size());
  return n;
}

bool EtherSystem::save_area_full(uint32_t node, const Packet& p) const {
  if (mutant::on(mutant::Id::SaveAreaUnbounded)) return false;
  if (is_kernel_ack(p)) return false;  // never saved
  const Task* t = n_[node]->ts->find(p.dst_ptask);
  return t && t->waiting_page && saved_packets(node) >= c_.save_area;
}

// The buffer bound, checked online: the area holds at most mbcf.save_area packets besides the
// one that faulted for each waiting task. A breach stops the run (exit 2) with a dump.
void EtherSystem::check_save_area(uint32_t node) {
  uint32_t waiting = 0;
  for (const auto& [id, t] : n_[node]->ts->tasks()) waiting += t->waiting_page;
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
      if (h) ex(node).reply_data(h, reps);
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
  if (tl_flow_) {  // (what goes back to the requester continues its request's flow; forwards do not)
    auto it = tl_origin_.find(tl_flow_);
    if (it != tl_origin_.end() && it->second == dst_node) p.tl_flow = tl_flow_;
  }
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
  // Through the user-level scheduler: two upcalls, the scheduler's and then the program's.
  const uint32_t upcalls = iv.kind == Invocation::DspByUls ? 2 : 1;
  const uint32_t pc = iv.kind == Invocation::DspByUls ? iv.dsp_pc : iv.pc;
  const uint64_t msg = static_cast<uint64_t>(iv.ptask) << 32 | iv.signal_laddr;
  ex(node).upcall(msg, [this, node, iv, upcalls, pc] {
    Node& N = *n_[node];
    auto it = N.programs.find({iv.ptask, pc});
    // The program returns through the kernel, which lowers the structure's running count
    // (EVERY_TIME conditions): like a light-weight call, once the NIC's writes to host memory
    // have landed, or a count a command raised but has not yet written would overwrite it.
    auto finish = [this, node, iv] {
      ex(node).quiesce([this, node, iv, inc = n_[node]->incarnation] {
        if (n_[node]->incarnation != inc) return;
        Task* t = n_[node]->ts->find(iv.ptask);
        if (t) signal_returned(*n_[node]->ts, *t, iv.signal_laddr);
        run_pollers(node, cal_.now_ps());
      });
    };
    if (it == N.programs.end()) {
      N.os->invoke(upcalls, finish);
      return;
    }
    Program prog = it->second;
    N.os->invoke(upcalls, [iv, prog, finish] { prog(iv, finish); });
  });
}

}  // namespace mbpsim::mbcf
