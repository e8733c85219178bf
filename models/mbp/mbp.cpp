// mbp::System: the MBP. Messages between MBPs and their timing (N-TLB, one engine per bank),
// the remote controller (L3 copies, pending requests) and the online checkers. The home
// controller is in mbp_home.cpp.
#include <algorithm>
#include <cstring>
#include <sstream>

#include "models/core/error.h"
#include "models/core/mutant.h"
#include "models/core/timeline.h"
#include "models/mbp/system.h"
#include "models/mbp/system_internal.h"

namespace mbpsim::mbp {

// ---------------------------------------------------------------- messages

Msg* System::new_msg(MsgType t, uint32_t src, uint32_t dst) {
  if (msg_free_.empty()) {
    msg_all_.push_back(std::make_unique<Msg>());
    msg_free_.push_back(msg_all_.back().get());
  }
  Msg* m = msg_free_.back();
  msg_free_.pop_back();
  *m = Msg();
  m->type = t;
  m->src = src;
  m->dst = dst;
  m->issued_ps = now_ps();
  return m;
}

void System::free_msg(Msg* m) { msg_free_.push_back(m); }

uint32_t System::flits_of(MsgType t) const {
  return mc_.header_flits + (carries_data(t) ? data_flits_ : 0);
}

// Counted by type and by the protocol the message was sent under.
void System::count_msg(const Msg* m) {
  st_.msgs[static_cast<int>(m->type)]->inc();
  st_.proto_msgs[static_cast<int>(m->proto)]->inc();
}

// Sends at time `at` (>= now). To the own node: through the MBP's input queue after a bus
// hop; elsewhere: a network packet (requests and answers use disjoint virtual channels).
void System::send(Msg* m, uint64_t at) {
  if (m->src == m->dst) {  // to the own node's MBP: handled once its engine has served it
    count_msg(m);
    schedule(service(m->dst, m, at), kHandle, m->dst, 0, m);
    return;
  }
  if (at > now_ps()) {
    schedule(at, kSend, m->src, 0, m);
    return;
  }
  count_msg(m);
  if (Timeline* tl = timeline(); tl && is_request(m->type) && !m->flow) {
    m->flow = tl->next_flow_id();
    m->flow_ps = now_ps();
  }
  net::Packet* p = net_.new_packet();
  p->src = m->src;
  p->dst = m->dst;
  p->cls = is_request(m->type) || m->type == MsgType::Recall || m->type == MsgType::Inv ||
                   m->type == MsgType::Upd || m->type == MsgType::PageInv
               ? net::kRequest
               : net::kReply;
  p->size_flits = static_cast<uint16_t>(flits_of(m->type));
  p->payload = m;
  net_.inject(p);
}

// When a message that arrived at `arrive` has been handled by the MBP of the block's bank:
// the engine serves one message at a time; a handler that reads or writes the block also
// waits for the bank.
uint64_t System::service(uint32_t n, Msg* m, uint64_t arrive) {
  Node& nd = *node_[n];
  const Frame* f = frame_for(n, m->nblk / blocks_per_page_, false);
  uint64_t paddr = 0;
  if (f) {
    const uint64_t bi = m->nblk % blocks_per_page_;
    paddr = f->frame_no * nc_.page_bytes + bi * nc_.block_bytes;
    // The handler reads the block's state when the engine is done; a multicast round
    // reaches dozens of nodes at once, and without this each one waits for the host's memory.
    __builtin_prefetch(&f->st[bi]);
  }
  const uint32_t bank = bank_of(paddr);
  const uint64_t start = std::max(arrive, nd.mbp_free[bank]);
  nd.mbp_queue_ps->sample(start - arrive);
  uint64_t end = start + mc_.handler_cycles * mbp_ps_;
  nd.mbp_free[bank] = end;
  const bool memory = carries_data(m->type) || m->type == MsgType::GetS || m->type == MsgType::GetX ||
                      m->type == MsgType::ReadH || m->type == MsgType::Recall;
  if (memory && f) end = std::max(end, bank_access(nd, start, paddr));
  // A request at the home reads the page's directory entry, which the C-TLB entry of the page
  // caches (2.4); on a C-TLB miss the MBP refills it and reads the entry from memory.
  if (f && f->home && is_request(m->type)) {
    const uint64_t ppage = f->frame_no;
    if (nd.mbp.ctlb.lookup(ppage, nullptr)) {
      nd.ctlb_hits->inc();
    } else {
      nd.ctlb_misses->inc();
      nd.mbp.ctlb.insert(ppage, 0);
      end = std::max(end, bank_access(nd, end + mc_.ctlb_miss_cycles * mbp_ps_, paddr));
    }
  }
  nd.mbp_msgs_in->inc();
  return end;
}

void System::on_packet(uint32_t n, net::Packet& p, uint64_t) {
  Msg* m = static_cast<Msg*>(p.payload);
  Node& nd = *node_[n];
  uint64_t arrive = now_ps();
  // N-TLB: network page -> node-physical page for every incoming message.
  const uint64_t page = m->nblk / blocks_per_page_;
  if (nd.mbp.ntlb.lookup(page, nullptr)) {
    nd.ntlb_hits->inc();
  } else {
    nd.ntlb_misses->inc();
    if (frame_for(n, page, false)) nd.mbp.ntlb.insert(page, 0);
    arrive += mc_.ntlb_miss_cycles * mbp_ps_;
  }
  const uint64_t end = service(n, m, arrive);
  if (Timeline* tl = timeline()) trace_service(*tl, n, *m, now_ps(), end);
  if (p.kind == net::PacketKind::Multicast) {
    if (mc_free_.empty()) {
      mc_free_.push_back(static_cast<uint32_t>(mc_pkts_.size()));
      mc_pkts_.push_back(std::make_unique<net::Packet>());
    }
    const uint32_t slot = mc_free_.back();
    mc_free_.pop_back();
    *mc_pkts_[slot] = p;
    schedule(end, kHandleMc, n, slot, m);
  } else {
    schedule(end, kHandle, n, 0, m);
  }
}

// The timeline: the MBP's service of a message from the network, and the request-to-answer
// flow, which leaves from the requesting processor's track (a slice from the request leaving
// the node to the answer served there), passes the home's service of the request and ends with
// the answer's.
void System::trace_service(Timeline& tl, uint32_t n, const Msg& m, uint64_t arrive, uint64_t end) {
  const int mbp = tl.track(node_[n]->mbp.name());
  tl.slice(mbp, std::string(to_string(m.type)) + " from n" + std::to_string(m.src), arrive, end,
           "{\"block\":" + std::to_string(m.nblk) + ",\"requester\":" + std::to_string(m.requester) + "}");
  if (!m.flow) return;
  if (is_request(m.type)) {
    tl.flow(mbp, "request to its answer", m.flow, 't', arrive);
  } else if (n == m.requester) {
    // (A write-back is the node's, not a processor's.)
    const int proc = m.type == MsgType::PutAck ? mbp : tl.track(node_[n]->procs[m.proc]->name());
    tl.slice(proc, "block " + std::to_string(m.nblk) + " from n" + std::to_string(m.src) + ": " + to_string(m.type), m.flow_ps, end,
             "{\"block\":" + std::to_string(m.nblk) + ",\"home\":" + std::to_string(m.src) + ",\"answer\":\"" + to_string(m.type) + "\"}");
    tl.flow(proc, "request to its answer", m.flow, 's', m.flow_ps);
    tl.flow(proc, "request to its answer", m.flow, 'f', end);
  }
}

void System::on_ack(uint32_t, const net::Packet& ack, uint64_t) {
  auto it = rounds_.find(ack.txn);
  if (it == rounds_.end()) {
    if (mutant::on(mutant::Id::GrantBeforeAllAcks)) return;  // the late acknowledgement of a round done early
    internal_error("acknowledgement for an unknown round");
  }
  Round* r = it->second;
  st_.combined_acks->inc();
  r->got += ack.ack_count;
  r->held += ack.ack_held;
  if (round_complete(r)) round_done(r);
}

bool System::round_complete(const Round* r) const {
  if (mutant::on(mutant::Id::GrantBeforeAllAcks) && r->expected > 1) return r->got + 1 >= r->expected;
  return r->got == r->expected;
}

void System::ack_round(uint32_t n, Msg* m, const net::Packet* mcast, bool held) {
  (held ? st_.acks_held : st_.deliveries_no_copy)->inc();
  if (mc_.check_invariants) {  // the truth the combined acknowledgements must add up to
    auto it = rounds_.find(m->round);
    if (it != rounds_.end()) {
      ++it->second->delivered;
      it->second->held_really += held;
    }
  }
  if (mutant::on(mutant::Id::AckWithoutHeldFlag)) held = false;
  if (mcast) {
    st_.proto_msgs[static_cast<int>(m->proto)]->inc();  // an acknowledgement is a message too
    net_.send_ack(n, *mcast, held);
    return;
  }
  Msg* a = new_msg(MsgType::RoundAck, n, m->src);
  a->nblk = m->nblk;
  a->proto = m->proto;
  a->round = m->round;
  a->held = held;
  send(a, now_ps());
}

void System::handle(uint32_t n, Msg* m, const net::Packet* mcast) {
  try {
    handle_msg(n, m, mcast);
  } catch (const ProtocolFailure&) {
    // The failure is recorded; the run stops with exit status 2.
  }
}

void System::handle_msg(uint32_t n, Msg* m, const net::Packet* mcast) {
  const uint64_t page = m->nblk / blocks_per_page_;
  const uint32_t bi = static_cast<uint32_t>(m->nblk % blocks_per_page_);
  Node& nd = *node_[n];
  if (m->type == MsgType::Inv || m->type == MsgType::Upd || m->type == MsgType::PageInv) nd.round_in->inc();
  switch (m->type) {
    case MsgType::GetS: case MsgType::GetX: case MsgType::ReadH: case MsgType::WriteH:
    case MsgType::Atomic: case MsgType::PutX: case MsgType::SetProto:
      home_request(n, m);  // owns m from here
      return;
    case MsgType::RecallData: {
      Frame* f = frame_for(n, page, false);
      home_event(f, bi, HEvent::RecallData, m);
      break;
    }
    case MsgType::RoundAck: {
      auto it = rounds_.find(m->round);
      if (it == rounds_.end()) {
        if (mutant::on(mutant::Id::GrantBeforeAllAcks)) break;
        internal_error("unicast acknowledgement for an unknown round");
      }
      Round* r = it->second;
      st_.unicast_acks->inc();
      ++r->got;
      r->held += m->held;
      if (round_complete(r)) round_done(r);
      break;
    }
    case MsgType::Inv: case MsgType::Upd: {
      Frame* f = frame_for(n, page, false);
      if (!f) ack_round(n, m, mcast, false);
      else remote_event(n, f, bi, m->type == MsgType::Inv ? REvent::Inv : REvent::Upd, m, mcast);
      break;
    }
    case MsgType::PageInv: {
      Frame* f = frame_for(n, page, false);
      bool held = false;
      if (f) {
        for (uint32_t b = 0; b < blocks_per_page_; ++b) {
          const RState s = static_cast<RState>(f->st[b]);
          if (s == RState::I || s == RState::ISP || s == RState::IE) continue;  // nothing held here
          held |= s == RState::S || s == RState::SE;
          remote_event(n, f, b, REvent::Inv, m, nullptr, /*ack=*/false);
        }
      }
      ack_round(n, m, mcast, held);
      break;
    }
    case MsgType::Recall: {
      // A recall that crossed this node's write-back of the block: answer from the write-back.
      auto wb = nd.wb_pending.find(m->nblk);
      if (wb != nd.wb_pending.end()) {
        Msg* r = new_msg(MsgType::RecallData, n, m->src);
        r->nblk = m->nblk;
        r->proto = m->proto;
        std::memcpy(r->data, wb->second.data.data(), nc_.block_bytes);
        send(r, now_ps());
        break;
      }
      Frame* f = frame_for(n, page, false);
      if (!f) undefined("remote", n, m->nblk, "(no frame)", "Recall");
      if (remote_event(n, f, bi, REvent::Recall, m, nullptr)) return;  // deferred: kept
      break;
    }
    case MsgType::Data: case MsgType::DataOnce: case MsgType::DataX: case MsgType::Nack: {
      Frame* f = frame_for(n, page, false);
      const REvent e = m->type == MsgType::Data ? REvent::Data : m->type == MsgType::DataOnce ? REvent::DataOnce
                       : m->type == MsgType::DataX ? REvent::DataX : REvent::Nack;
      remote_event(n, f, bi, e, m, nullptr);
      break;
    }
    case MsgType::LocalGrant:
      retry_issuer(*nd.procs[m->proc]);
      break;
    case MsgType::PutAck: {
      auto wb = nd.wb_pending.find(m->nblk);
      if (wb == nd.wb_pending.end()) internal_error("write-back acknowledgement without a write-back");
      const std::vector<uint32_t> waiters = std::move(wb->second.waiters);
      nd.wb_pending.erase(wb);
      for (uint32_t w : waiters) {
        unblock(*nd.procs[w]);
        resume_later(*nd.procs[w], now_ps());
      }
      break;
    }
    case MsgType::ReadResp: case MsgType::AtomicResp: case MsgType::SetProtoAck: {
      Frame* f = frame_for(n, page, false);
      if (f && !f->home) f->proto = m->proto;
      complete_from_msg(*nd.procs[m->proc], m);
      break;
    }
    case MsgType::WriteAck: {
      Frame* f = frame_for(n, page, false);
      if (f && !f->home) f->proto = m->proto;
      wb_retire(*nd.procs[m->proc], m->op_id);
      break;
    }
    default: internal_error(std::string("unexpected message ") + to_string(m->type));
  }
  if (!mcast) free_msg(m);
}

// ---------------------------------------------------------------- remote controller

void System::remote_request(Proc& p, Frame* f, uint32_t bi, REvent e) {
  Node& nd = *node_[p.node];
  auto wb = nd.wb_pending.find(f->npage * blocks_per_page_ + bi);
  if (wb != nd.wb_pending.end()) {  // not requested again until the home has the write-back
    wb->second.waiters.push_back(p.id);
    block_proc(p, now_ps(), "waiting for the home to acknowledge a write-back of the block");
    p.waiting = WaitKind::Mshr;
    return;
  }
  const RState s = static_cast<RState>(f->st[bi]);
  const uint64_t nblk = f->npage * blocks_per_page_ + bi;
  const RRow* row = remote_row(s, e);
  if (!row) undefined("remote", p.node, nblk, to_string(s), to_string(e));
  st_.remote_trans[static_cast<int>(s)][static_cast<int>(e)]->inc();
  const uint64_t now = now_ps();
  if (row->action == RAction::Wait) {
    nd.mshr[nblk].waiters.push_back(p.id);
    block_proc(p, now, "merged with another processor's miss");
    p.waiting = WaitKind::Mshr;
    return;
  }
  f->st[bi] = static_cast<uint8_t>(row->next);
  Mshr& ms = nd.mshr[nblk];
  ms.issuer = p.id;
  ms.since = now;
  Msg* m = proc_request(row->action == RAction::GetS ? MsgType::GetS : MsgType::GetX, p, f, nblk);
  block_proc(p, now, row->action == RAction::GetS ? "read miss at the home" : "write miss at the home");
  uint64_t at = now;
  bus_op(p.node, p.bus, BusOp::Kind::Request, paddr_of(f, bi), at, nullptr, m);
}

// Returns true when the message was kept (a recall deferred until an exclusive fill).
bool System::remote_event(uint32_t n, Frame* f, uint32_t bi, REvent e, Msg* m, const net::Packet* mcast, bool ack) {
  Node& nd = *node_[n];
  const RState s = static_cast<RState>(f->st[bi]);
  const uint64_t nblk = f->npage * blocks_per_page_ + bi;
  const RRow* row = remote_row(s, e);
  if (!row) undefined("remote", n, nblk, to_string(s), to_string(e));
  st_.remote_trans[static_cast<int>(s)][static_cast<int>(e)]->inc();
  // The block's bytes are found only by the actions that use them: most events of a
  // multicast round reach nodes without a copy, and finding them costs a host cache miss.
  switch (row->action) {
    case RAction::FillS:
    case RAction::FillX:
      std::memcpy(mem(f, bi), m->data, nc_.block_bytes);
      f->st[bi] = static_cast<uint8_t>(row->next);
      f->proto = m->proto;
      finish_mshr(n, f, bi, nullptr);
      return false;
    case RAction::FillOnce:
      f->st[bi] = static_cast<uint8_t>(row->next);
      f->proto = m->proto;
      st_.use_once_fills->inc();
      finish_mshr(n, f, bi, m->data);
      return false;
    case RAction::NackToI:
    case RAction::NackToS:
      f->st[bi] = static_cast<uint8_t>(row->next);
      f->proto = m->proto;
      finish_mshr(n, f, bi, nullptr);
      return false;
    case RAction::InvCopy:
      if (mbp_snoop(nd, f, bi, true)) nd.bus_snoop_inv->inc();
      f->st[bi] = static_cast<uint8_t>(row->next);
      if (ack) ack_round(n, m, mcast, true);
      return false;
    case RAction::UpdCopy: {
      uint8_t* blk = mem(f, bi);
      for (uint32_t i = 0; i < nc_.block_bytes; ++i)
        if (mask_test(m->mask, i)) blk[i] = m->data[i];
      if (mbp_snoop(nd, f, bi, true)) nd.bus_snoop_inv->inc();
      if (ack) ack_round(n, m, mcast, true);
      return false;
    }
    case RAction::AckNo:
      if (ack) ack_round(n, m, mcast, false);
      return false;
    case RAction::Poison:
      f->st[bi] = static_cast<uint8_t>(row->next);
      if (ack) ack_round(n, m, mcast, false);
      return false;
    case RAction::RecallReply: {
      if (mbp_snoop(nd, f, bi, !m->down)) nd.bus_snoop_inv->inc();
      f->st[bi] = static_cast<uint8_t>(m->down ? RState::S : RState::I);
      Msg* r = new_msg(MsgType::RecallData, n, f->home_node);
      r->nblk = nblk;
      r->proto = m->proto;
      std::memcpy(r->data, mem(f, bi), nc_.block_bytes);
      send(r, now_ps());
      return false;
    }
    case RAction::DeferRecall:
      nd.mshr[nblk].deferred_recall = m;
      return true;
    default: internal_error("remote action used out of place");
  }
  return false;
}

// The node's pending request for a block is answered: its issuer goes first (synchronously,
// so a following invalidation cannot starve it), merged processors retry, a recall that
// overtook an exclusive grant is served last. `once`: the fill's data, used by the issuer's
// load and not kept.
void System::finish_mshr(uint32_t n, Frame* f, uint32_t bi, const uint8_t* once) {
  Node& nd = *node_[n];
  const uint64_t nblk = f->npage * blocks_per_page_ + bi;
  auto it = nd.mshr.find(nblk);
  if (it == nd.mshr.end()) internal_error("fill without a pending request");
  Mshr ms = std::move(it->second);
  nd.mshr.erase(it);
  Proc& p = *nd.procs[ms.issuer];
  const uint64_t now = now_ps();
  if (once && p.op.kind == OpKind::Load) {
    unblock(p);
    const uint32_t boff = static_cast<uint32_t>(p.op.addr % nc_.block_bytes);
    std::memcpy(p.op.data, once + boff, p.op.size);
    bool any = false;
    forward_wb(p, nblk, boff, p.op.size, p.op.data, &any);
    p.lvl = 4;
    finish_op(p, now);
    resume_later(p, now);
  } else {
    retry_issuer(p);
  }
  for (uint32_t w : ms.waiters) {
    Proc& q = *nd.procs[w];
    unblock(q);
    resume_later(q, now);
  }
  if (ms.deferred_recall) {
    Msg* r = ms.deferred_recall;
    remote_event(n, f, bi, REvent::Recall, r, nullptr);
    free_msg(r);
  }
}

void System::retry_issuer(Proc& p) {
  unblock(p);
  const uint64_t now = now_ps();
  uint64_t t = std::max(p.t, now);
  p.synced = false;
  p.attempt_t = t;
  const Outcome o = execute(p, t, now);
  if (o == Outcome::Done) {
    finish_op(p, t);
    resume_later(p, t);
  } else if (o == Outcome::Sync) {
    p.synced = true;
    p.t = t;
    resume_later(p, t);
  }
}

void System::complete_from_msg(Proc& p, Msg* m) {
  unblock(p);
  const uint64_t now = now_ps();
  if (m->type == MsgType::ReadResp) {
    const uint32_t boff = static_cast<uint32_t>(p.op.addr % nc_.block_bytes);
    std::memcpy(p.op.data, m->data + boff, p.op.size);
    bool any = false;
    forward_wb(p, m->nblk, boff, p.op.size, p.op.data, &any);
  } else if (m->type == MsgType::AtomicResp) {
    std::memcpy(p.op.data, m->data + m->aoff, m->atomic.bytes());
  }
  p.lvl = 4;
  finish_op(p, now);
  resume_later(p, now);
}

// ---------------------------------------------------------------- online checkers

void System::check_swmr(uint32_t writer, int proc, uint64_t nblk) {
  st_.checks_swmr->inc();
  const uint64_t page = nblk / blocks_per_page_;
  const uint32_t bi = static_cast<uint32_t>(nblk % blocks_per_page_);
  for (uint32_t n = 0; n < nodes_; ++n) {
    const Frame* f = node_[n]->pt.get(page);
    if (!f) continue;
    const uint64_t pblk = f->frame_no * blocks_per_page_ + bi;
    for (auto& q : node_[n]->procs) {
      if (n == writer && static_cast<int>(q->id) == proc) continue;
      if (q->l2.find(pblk)) {
        std::ostringstream os;
        os << "single-writer invariant: node " << writer << " proc " << proc << " writes block 0x" << std::hex
           << nblk * nc_.block_bytes << std::dec << " while node " << n << " proc " << q->id << " caches it";
        fail(os.str());
        return;
      }
    }
    if (n == writer) continue;
    // The home may already be recalling the block: the owner writes until the recall arrives.
    const HState hs = static_cast<HState>(f->st[bi]);
    const bool bad = f->home ? !((hs == HState::Owned || hs == HState::RecallS || hs == HState::RecallX) && f->owner[bi] == writer)
                             : (f->st[bi] == static_cast<uint8_t>(RState::S) || f->st[bi] == static_cast<uint8_t>(RState::E) ||
                                f->st[bi] == static_cast<uint8_t>(RState::SE));
    if (bad) {
      std::ostringstream os;
      os << "single-writer invariant: node " << writer << " writes block 0x" << std::hex << nblk * nc_.block_bytes
         << std::dec << " while node " << n << " is in state "
         << (f->home ? to_string(static_cast<HState>(f->st[bi])) : to_string(static_cast<RState>(f->st[bi])));
      fail(os.str());
      return;
    }
  }
}

void System::check_value(uint64_t nblk, uint32_t off, uint32_t size, const uint8_t* got, const char* where) {
  auto it = golden_.find(nblk);
  if (it == golden_.end()) return;
  st_.checks_value->inc();
  if (std::memcmp(&it->second[off], got, size) == 0) return;
  std::ostringstream os;
  os << "data-value invariant: a " << where << " of block 0x" << std::hex << nblk * nc_.block_bytes << std::dec
     << " offset " << off << " returned a value other than the last write";
  fail(os.str());
}

void System::golden_write(uint64_t nblk, uint32_t off, uint32_t size, const uint8_t* bytes) {
  auto it = golden_.find(nblk);
  if (it != golden_.end()) std::memcpy(&it->second[off], bytes, size);
}

// Combined acknowledgements (2.5): when a round completes, the acknowledgements that reached
// the home must account for exactly the nodes the round was delivered to, and their "held a
// copy" flags for exactly the nodes that held one (counted where each node acknowledged).
void System::check_round_acks(const Round& r) {
  st_.checks_round_acks->inc();
  if (r.got == r.delivered && r.delivered == r.expected && r.held == r.held_really) return;
  std::ostringstream os;
  os << "acknowledgement invariant: round " << r.id << " (" << (r.page ? "page invalidation" : r.kind == MsgType::Upd ? "update" : "invalidation")
     << ") of block 0x" << std::hex << (r.f->npage * blocks_per_page_ + r.bi) * nc_.block_bytes << std::dec << " at home node "
     << r.f->node << " completed with " << r.got << " acknowledgements for " << r.expected << " targets, " << r.delivered
     << " of them delivered; " << r.held << " acknowledgements say they held a copy, " << r.held_really << " did";
  fail(os.str());
}

void System::check_update_copies(Frame* home, uint32_t bi) {
  st_.checks_update->inc();
  const uint8_t* home_mem = mem(home, bi);
  const uint64_t nblk = home->npage * blocks_per_page_ + bi;
  for (uint32_t n = 0; n < nodes_; ++n) {
    const Frame* f = node_[n]->pt.get(home->npage);
    if (!f) continue;
    const RState s = static_cast<RState>(f->st[bi]);
    const bool copy = !f->home && (s == RState::S || s == RState::SE);
    std::string bad;
    if (copy && std::memcmp(mem(f, bi), home_mem, nc_.block_bytes) != 0) bad = "its L3 copy";
    const uint64_t pblk = f->frame_no * blocks_per_page_ + bi;
    for (auto& q : node_[n]->procs) {
      node::Cache::Line* l = q->l2.find(pblk);
      if (l && std::memcmp(q->l2.data(l), home_mem, nc_.block_bytes) != 0) bad = "an L2 copy of proc " + std::to_string(q->id);
    }
    if (!bad.empty()) {
      std::ostringstream os;
      os << "update invariant: after an update round of block 0x" << std::hex << nblk * nc_.block_bytes << std::dec
         << " node " << n << " holds " << bad << " that differs from the home's memory";
      fail(os.str());
      return;
    }
  }
}

}  // namespace mbpsim::mbp
