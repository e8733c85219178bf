// mbp::System: the MBP's home controller. The directory, recalls, invalidation and update
// rounds, atomics, write-backs and protocol switches, driven by the home state x event table
// (protocol.cpp).
#include <algorithm>
#include <cstring>
#include <sstream>

#include "models/core/error.h"
#include "models/core/mutant.h"
#include "models/core/timeline.h"
#include "models/mbp/system.h"
#include "models/mbp/system_internal.h"

namespace mbpsim::mbp {

// ---------------------------------------------------------------- home controller

namespace {
HEvent event_of(const Msg* m) {
  switch (m->type) {
    case MsgType::GetS: return HEvent::GetS;
    case MsgType::GetX: return HEvent::GetX;
    case MsgType::ReadH: return HEvent::ReadH;
    case MsgType::WriteH: return HEvent::WriteH;
    case MsgType::Atomic: return HEvent::Atomic;
    case MsgType::PutX: return HEvent::PutX;
    default: return HEvent::Cleanup;  // SetProto: a switch's per-block cleanup
  }
}
}  // namespace

void System::home_request(uint32_t n, Msg* m) {
  Frame* f = frame_for(n, m->nblk / blocks_per_page_, true);
  if (!f->home) internal_error("request sent to a node that is not the page's home");
  DirPage& d = *f->dir;
  st_.dir_lookups[static_cast<int>(f->fmt)]->inc();
  if (d.switching || d.switch_waiting) {
    d.gate_q.push_back(m);
    return;
  }
  st_.proto_actions[static_cast<int>(f->proto)]->inc();
  if (m->type == MsgType::SetProto) {
    d.switch_req = m;
    if (d.busy_blocks > 0 || d.rounds > 0) d.switch_waiting = true;
    else start_switch(f);
    return;
  }
  home_dispatch(f, m);
}

void System::begin_busy(Frame* f, uint32_t bi, Msg* m) {
  f->dir->busy[bi] = m;
  ++f->dir->busy_blocks;
}

Msg* System::end_busy(Frame* f, uint32_t bi) {
  auto it = f->dir->busy.find(bi);
  Msg* m = it->second;
  f->dir->busy.erase(it);
  --f->dir->busy_blocks;
  return m;
}

// Sets the state a home transition leads to, which must be in its row's next-state column.
void System::home_to(Frame* f, uint32_t bi, HState s, HEvent e, HState to) {
  if (!(home_next(s, e) & hs(to)))
    undefined("home", f->node, f->npage * blocks_per_page_ + bi, to_string(s),
              (std::string(to_string(e)) + " (leading to " + to_string(to) + ", which its row does not list)").c_str());
  f->st[bi] = static_cast<uint8_t>(to);
}

void System::home_dispatch(Frame* f, Msg* m) {
  DirPage& d = *f->dir;
  const uint32_t bi = static_cast<uint32_t>(m->nblk % blocks_per_page_);
  const HState s = static_cast<HState>(f->st[bi]);
  const HEvent e = event_of(m);
  const HAction a = home_action(s, e);
  if (a == HAction::Undefined) undefined("home", f->node, m->nblk, to_string(s), to_string(e));
  st_.home_trans[static_cast<int>(s)][static_cast<int>(e)]->inc();
  const bool local = m->requester == f->node;
  auto add_sharer = [&]() -> bool {  // false: deferred, the set must not coarsen during a round
    if (dirfmt_.add_coarsens(d.sharers, f->node, m->requester) && d.rounds > 0) {
      d.coarsen_q.push_back(m);
      st_.coarsen_deferred->inc();
      return false;
    }
    if (dirfmt_.add(d.sharers, f->node, m->requester)) st_.pointer_overflows->inc();
    return true;
  };
  switch (a) {
    case HAction::Defer: d.blockq[bi].push_back(m); return;
    case HAction::SendData:
      if (local) {
        reply(m, MsgType::LocalGrant, f, bi);
      } else if (f->proto == Protocol::NonCacheable) {
        reply(m, MsgType::DataOnce, f, bi);
      } else {
        if (!add_sharer()) return;
        home_flush_local(f, bi, false);
        home_to(f, bi, s, e, HState::Shared);
        reply(m, MsgType::Data, f, bi);
      }
      free_msg(m);
      return;
    case HAction::GrantX:
      if (local) {  // the home's own processor retries; it sees the current protocol itself
        reply(m, MsgType::LocalGrant, f, bi);
      } else if (f->proto != Protocol::Invalidate) {
        st_.nacks->inc();
        reply(m, MsgType::Nack, f, bi);
      } else {
        if (!add_sharer()) return;
        home_flush_local(f, bi, true);
        f->owner[bi] = m->requester;
        home_to(f, bi, s, e, HState::Owned);
        reply(m, MsgType::DataX, f, bi);
      }
      free_msg(m);
      return;
    case HAction::InvForX:
      if (f->proto != Protocol::Invalidate) {
        if (!local) st_.nacks->inc();
        reply(m, local ? MsgType::LocalGrant : MsgType::Nack, f, bi);
        free_msg(m);
        return;
      }
      invalidate_then(f, bi, m, s, e);
      return;
    case HAction::ReadReply:
      home_flush_local(f, bi, false);
      reply(m, MsgType::ReadResp, f, bi);
      free_msg(m);
      return;
    case HAction::WriteNone:
      perform_write(f, bi, m);
      reply(m, m->type == MsgType::Atomic ? MsgType::AtomicResp : MsgType::WriteAck, f, bi);
      free_msg(m);
      return;
    case HAction::WriteShared:
      if (f->proto == Protocol::Invalidate) {
        invalidate_then(f, bi, m, s, e);
        return;
      }
      if (f->proto == Protocol::NonCacheable) undefined("home", f->node, m->nblk, "Shared (non-cacheable page)", to_string(e));
      if (perform_write(f, bi, m)) {
        begin_busy(f, bi, m);
        if (start_round(f, bi, MsgType::Upd, m)) {
          home_to(f, bi, s, e, HState::UpdRound);
          return;
        }
        end_busy(f, bi);
      }
      reply(m, m->type == MsgType::Atomic ? MsgType::AtomicResp : MsgType::WriteAck, f, bi);
      free_msg(m);
      return;
    case HAction::RecallDown:
    case HAction::RecallInv: {
      const bool down = e == HEvent::Cleanup ? d.switch_to == Protocol::Update : a == HAction::RecallDown;
      begin_busy(f, bi, m);
      Msg* r = new_msg(MsgType::Recall, f->node, f->owner[bi]);
      r->nblk = m->nblk;
      r->proto = f->proto;
      r->down = down;
      st_.recalls->inc();
      home_to(f, bi, s, e, down ? HState::RecallS : HState::RecallX);
      send(r, now_ps());
      return;
    }
    case HAction::CleanupDone: free_msg(m); return;
    case HAction::WriteBack:
      if (s == HState::Owned && f->owner[bi] == m->src) {
        std::memcpy(mem(f, bi), m->data, nc_.block_bytes);
        home_to(f, bi, s, e, HState::None);
      } else {
        st_.stale_writebacks->inc();  // a recall crossed it and already brought the data
      }
      reply(m, MsgType::PutAck, f, bi);
      free_msg(m);
      return;
    default: internal_error("home action used out of place");
  }
}

// Invalidate-type: every remote copy must go before the request is served again on None.
void System::invalidate_then(Frame* f, uint32_t bi, Msg* m, HState s, HEvent e) {
  begin_busy(f, bi, m);
  if (start_round(f, bi, MsgType::Inv, m)) {
    home_to(f, bi, s, e, HState::InvRound);
    return;
  }
  // The sharer set names no one (only possible when it was cleared): nothing to invalidate.
  end_busy(f, bi);
  home_to(f, bi, s, e, HState::None);
  home_dispatch(f, m);
  home_block_idle(f, bi);
}

void System::home_event(Frame* f, uint32_t bi, HEvent e, Msg* data) {
  const HState s = static_cast<HState>(f->st[bi]);
  const HAction a = home_action(s, e);
  const uint64_t nblk = f->npage * blocks_per_page_ + bi;
  if (a == HAction::Undefined) undefined("home", f->node, nblk, to_string(s), to_string(e));
  st_.home_trans[static_cast<int>(s)][static_cast<int>(e)]->inc();
  Msg* pending = end_busy(f, bi);
  if (a == HAction::RecallDone) {
    std::memcpy(mem(f, bi), data->data, nc_.block_bytes);
    home_to(f, bi, s, e, s == HState::RecallS ? HState::Shared : HState::None);
    if (event_of(pending) == HEvent::Cleanup) {
      free_msg(pending);
      switch_step_done(f);
    } else {
      home_dispatch(f, pending);
    }
  } else if (s == HState::InvRound) {
    home_to(f, bi, s, e, HState::None);
    home_dispatch(f, pending);
  } else {  // UpdRound
    home_to(f, bi, s, e, HState::Shared);
    if (mc_.check_invariants) check_update_copies(f, bi);
    reply(pending, pending->type == MsgType::Atomic ? MsgType::AtomicResp : MsgType::WriteAck, f, bi);
    free_msg(pending);
  }
  home_block_idle(f, bi);
}

void System::home_block_idle(Frame* f, uint32_t bi) {
  DirPage& d = *f->dir;
  auto q = d.blockq.find(bi);
  while (q != d.blockq.end() && !q->second.empty() && !d.busy.count(bi) && !d.switching) {
    Msg* m = q->second.front();
    q->second.pop_front();
    home_dispatch(f, m);
    q = d.blockq.find(bi);
  }
  if (q != d.blockq.end() && q->second.empty()) d.blockq.erase(q);
  if (d.switch_waiting && d.busy_blocks == 0 && d.rounds == 0) start_switch(f);
}

// Writes the request's bytes (WriteH) or executes its atomic command at the home memory.
// Home L2 copies go first (a modified one is merged into memory). Returns whether memory
// changed; an atomic leaves the old contents in the request for the answer.
bool System::perform_write(Frame* f, uint32_t bi, Msg* m) {
  home_flush_local(f, bi, true);
  uint8_t* home_mem = mem(f, bi);
  bool changed = false;
  if (m->type == MsgType::Atomic) {
    uint8_t old[64];
    changed = mbcf::apply_atomic(m->atomic, home_mem + m->aoff, old);
    std::memcpy(m->data + m->aoff, old, m->atomic.bytes());
    m->mask = {};
    for (uint32_t i = 0; i < m->atomic.bytes(); ++i) mask_set(m->mask, m->aoff + i);
  } else {
    for (uint32_t i = 0; i < nc_.block_bytes; ++i)
      if (mask_test(m->mask, i)) home_mem[i] = m->data[i];
    changed = true;  // a write is performed (and acknowledged through a round) even if equal
  }
  if (mc_.check_invariants && f->proto == Protocol::Invalidate)
    golden_write(f->npage * blocks_per_page_ + bi, 0, nc_.block_bytes, home_mem);
  return changed;
}

void System::home_flush_local(Frame* f, uint32_t bi, bool invalidate) {
  Node& nd = *node_[f->node];
  if (mbp_snoop(nd, f, bi, invalidate, true)) nd.bus_snoop_inv->inc();
}

void System::reply(Msg* req, MsgType t, Frame* f, uint32_t bi) {
  Msg* r = new_msg(t, f->node, req->requester);
  r->requester = req->requester;
  r->proc = req->proc;
  r->op_id = req->op_id;
  r->flow = req->flow;
  r->flow_ps = req->flow_ps;
  r->nblk = req->nblk;
  r->proto = f->proto;
  r->aoff = req->aoff;
  r->atomic = req->atomic;
  if (t == MsgType::AtomicResp) std::memcpy(r->data, req->data, nc_.block_bytes);
  else if (carries_data(t)) std::memcpy(r->data, mem(f, bi), nc_.block_bytes);
  send(r, now_ps());
}

// Starts an invalidation or update round of one block (bi) or a page invalidation (bi ==
// UINT32_MAX) towards the page's sharer set. Returns false when the set names no one.
bool System::start_round(Frame* f, uint32_t bi, MsgType kind, Msg* req) {
  DirPage& d = *f->dir;
  // The requester of an exclusive copy keeps its shared copy when unicasts can leave it out.
  const uint32_t skip = req && req->type == MsgType::GetX ? req->requester : UINT32_MAX;
  const Delivery plan = dirfmt_.plan(d.sharers, f->node, skip);
  if (plan.targets == 0) return false;
  auto* r = new Round;
  r->id = next_round_++;
  r->f = f;
  r->page = bi == UINT32_MAX;
  r->bi = r->page ? 0 : bi;
  r->kind = kind;
  r->expected = plan.targets;
  if (mutant::on(mutant::Id::CoarsenDuringRound) && kind == MsgType::Inv) {
    // The sharer set gains the next node after the multicast was planned, and the round
    // counts its acknowledgements on the coarser set.
    auto coarse = d.sharers;
    dirfmt_.add(coarse, f->node, (f->node + 1 + static_cast<uint32_t>(r->id % (nodes_ - 1))) % nodes_);
    r->expected = std::max(plan.targets, dirfmt_.plan(coarse, f->node, skip).targets);
  }
  r->start_ps = now_ps();
  rounds_[r->id] = r;
  ++d.rounds;
  Msg* pl = new_msg(kind, f->node, f->node);
  pl->nblk = f->npage * blocks_per_page_ + r->bi;
  pl->round = r->id;
  pl->proto = f->proto;
  if (kind == MsgType::Upd) {
    std::memcpy(pl->data, mem(f, r->bi), nc_.block_bytes);
    pl->mask = req->mask;
  }
  st_.fanout->sample(plan.targets);
  st_.deliveries->inc(plan.targets);
  if (kind == MsgType::PageInv) st_.page_invalidations->inc();
  if (plan.multicast) {
    st_.rounds_mc->inc();
    r->payload = pl;
    count_msg(pl);
    net::Packet* p = net_.new_packet();
    p->kind = net::PacketKind::Multicast;
    p->src = f->node;
    p->bitmap = plan.bitmap;
    p->ack_req = true;
    p->txn = r->id;
    p->cls = net::kRequest;
    p->size_flits = static_cast<uint16_t>(flits_of(kind));
    p->payload = pl;
    net_.inject(p);
  } else {
    st_.rounds_uc->inc();
    for (uint32_t t : plan.unicasts) {
      Msg* c = new_msg(kind, f->node, t);
      *c = *pl;
      c->dst = t;
      send(c, now_ps());
    }
    free_msg(pl);
  }
  return true;
}

void System::round_done(Round* r) {
  rounds_.erase(r->id);
  if (mc_.check_invariants) check_round_acks(*r);
  Frame* f = r->f;
  DirPage& d = *f->dir;
  st_.round_latency->sample(now_ps() - r->start_ps);
  if (Timeline* tl = timeline())  // the round, from its start at the home to its last acknowledgement
    tl->slice(tl->track(node_[f->node]->mbp.name()), std::string(to_string(r->kind)) + " round " + std::to_string(r->id), r->start_ps, now_ps(),
              "{\"round\":" + std::to_string(r->id) + ",\"block\":" + std::to_string(r->bi) + ",\"expected\":" + std::to_string(r->expected) +
                  ",\"held\":" + std::to_string(r->held) + ",\"multicast\":" + (r->payload ? "true" : "false") + "}");
  if (r->payload) free_msg(r->payload);
  --d.rounds;
  if (d.rounds == 0 && !d.coarsen_q.empty()) {
    std::vector<Msg*> q;
    q.swap(d.coarsen_q);
    for (Msg* m : q) {
      if (d.switching || d.switch_waiting) d.gate_q.push_back(m);
      else home_dispatch(f, m);
    }
  }
  const bool page = r->page;
  const uint32_t bi = r->bi;
  delete r;
  if (page) switch_step_done(f);
  else home_event(f, bi, HEvent::RoundDone, nullptr);
}

// A protocol switch (2.6) of a page: the page's requests are held at the gate, blocks owned
// elsewhere are recalled (downgraded when the page becomes update-type, invalidated when it
// becomes non-cacheable), then for non-cacheable every copy goes by one page invalidation
// round; only then does the attribute change. Nodes learn it from the home's answers.
void System::start_switch(Frame* f) {
  DirPage& d = *f->dir;
  d.switching = true;
  d.switch_waiting = false;
  d.pageinv_done = false;
  d.switch_to = d.switch_req->proto;
  d.switch_outstanding = 1;
  if (d.switch_to != f->proto) {
    for (uint32_t bi = 0; bi < blocks_per_page_; ++bi) {
      Msg* c = new_msg(MsgType::SetProto, f->node, f->node);
      c->requester = f->node;
      c->nblk = f->npage * blocks_per_page_ + bi;
      c->proto = d.switch_to;
      home_dispatch(f, c);
      if (d.busy.count(bi)) ++d.switch_outstanding;
    }
  }
  switch_step_done(f);
}

void System::switch_step_done(Frame* f) {
  DirPage& d = *f->dir;
  if (--d.switch_outstanding > 0) return;
  if (d.switch_to != f->proto && d.switch_to == Protocol::NonCacheable && !d.pageinv_done) {
    d.pageinv_done = true;
    if (start_round(f, UINT32_MAX, MsgType::PageInv, nullptr)) {
      d.switch_outstanding = 1;
      return;
    }
  }
  const Protocol to = d.switch_to;
  if (to != f->proto) {
    for (uint32_t bi = 0; bi < blocks_per_page_; ++bi) {
      if (to != Protocol::Invalidate) home_flush_local(f, bi, to == Protocol::NonCacheable);
      if (to == Protocol::NonCacheable) f->st[bi] = static_cast<uint8_t>(HState::None);
    }
    if (to == Protocol::NonCacheable) dirfmt_.clear(d.sharers);
    f->proto = to;
    st_.protocol_switches->inc();
    if (mc_.check_invariants)
      for (uint32_t bi = 0; bi < blocks_per_page_; ++bi) {
        const uint64_t nblk = f->npage * blocks_per_page_ + bi;
        if (to == Protocol::Invalidate)
          golden_[nblk].assign(mem(f, bi), mem(f, bi) + nc_.block_bytes);
        else
          golden_.erase(nblk);
      }
  }
  Msg* req = d.switch_req;
  d.switch_req = nullptr;
  d.switching = false;
  reply(req, MsgType::SetProtoAck, f, static_cast<uint32_t>(req->nblk % blocks_per_page_));
  free_msg(req);
  std::deque<Msg*> q;
  q.swap(d.gate_q);
  while (!q.empty()) {
    Msg* m = q.front();
    q.pop_front();
    if (d.switching || d.switch_waiting) {
      d.gate_q.push_back(m);
      continue;
    }
    home_request(f->node, m);
  }
}

}  // namespace mbpsim::mbp
