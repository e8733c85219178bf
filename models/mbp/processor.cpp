// mbp::System: the processors (loosely timed, write buffer, P-TLB, L1/L2). A processor's hit is
// a lookup here; a miss becomes a transaction through its socket to the node bus (node_bus.h,
// node_bus.cpp), which another cache or the node's memory serves, or the MBP claims: then the
// processor asks the MBP (mbp.cpp) with a Request on the bus.
#include <algorithm>
#include <cstring>
#include <sstream>

#include "models/core/error.h"
#include "models/core/mutant.h"
#include "models/mbp/system.h"
#include "models/mbp/system_internal.h"

namespace mbpsim::mbp {

namespace {
// Copies of the common sizes are inlined; libc's memcpy call costs more than an 8-byte move.
inline void copy_bytes(uint8_t* dst, const uint8_t* src, uint32_t n) {
  switch (n) {
    case 8: std::memcpy(dst, src, 8); return;
    case 4: std::memcpy(dst, src, 4); return;
    case 32: std::memcpy(dst, src, 32); return;
    default: std::memcpy(dst, src, n);
  }
}
}  // namespace

// ---------------------------------------------------------------- the caches

void System::fill_caches(Proc& p, uint64_t pblk, const uint8_t* data, uint8_t l2state, uint64_t t) {
  Node& nd = *node_[p.node];
  const uint64_t bit = uint64_t{1} << p.id;
  node::Cache::Line* l = p.l2.find(pblk);
  if (!l) {
    l = p.l2.victim(pblk);
    if (l->state) {
      // Inclusion: the L1 copy goes too; a modified victim is written back to its frame.
      node::Cache::Line* v1 = p.l1.find(l->blk);
      if (v1) v1->state = 0;
      if (l->state == kL2M) {
        uint64_t wt = t;  // (a buffered write-back: no bus time)
        bus_op(p.node, p.bus, BusOp::Kind::WriteBack, l->blk * nc_.block_bytes, wt, p.l2.data(l));
      }
      if (!mutant::on(mutant::Id::SnoopFilterKeepsVictims)) l2_holders(nd, l->blk) &= ~bit;
    }
    l->blk = pblk;
  }
  l->state = l2state;
  if (l2state)
    l2_holders(nd, pblk) |= bit;
  else
    l2_holders(nd, pblk) &= ~bit;
  p.l2.touch(l);
  copy_bytes(p.l2.data(l), data, nc_.block_bytes);
  node::Cache::Line* l1 = p.l1.find(pblk);
  if (!l1) {
    l1 = p.l1.victim(pblk);
    l1->blk = pblk;
  }
  l1->link = p.l2.index_of(l);
  l1->state = l2state >= kL2E ? kL1Write : kL1Read;
  p.l1.touch(l1);
  copy_bytes(p.l1.data(l1), data, nc_.block_bytes);
}

void System::forward_wb(Proc& p, uint64_t nblk, uint32_t off, uint32_t size, uint8_t* out, bool* any) {
  for (const WbEntry& e : p.wb) {
    if (e.nblk != nblk) continue;
    for (uint32_t i = 0; i < size; ++i)
      if (mask_test(e.mask, off + i)) {
        out[i] = e.data[off + i];
        *any = true;
      }
  }
}

// ---------------------------------------------------------------- processors

void System::block_proc(Proc& p, uint64_t now, const char* why) {
  p.waiting = WaitKind::Mbp;
  p.wait_why = why;
  p.wait_since = now;
  ++waiting_procs_;
  if (!watchdog_armed_) {
    watchdog_armed_ = true;
    schedule(now + mc_.watchdog_ns * 1000, kWatchdog, 0);
  }
}

void System::unblock(Proc& p) {
  if (p.waiting == WaitKind::None) return;
  p.waiting = WaitKind::None;
  --waiting_procs_;
}

void System::run_proc(Proc& p, uint64_t now) {
  p.scheduled = false;
  if (p.waiting != WaitKind::None || !failure_.empty()) return;
  uint64_t t = std::max(p.t, now);
  const uint64_t limit = now + quantum_ps_;
  while (true) {
    if (!p.have_op) {
      if (!p.driver->next(p.node, p.id, p.op)) {
        p.sleeping = true;
        p.t = t;
        return;
      }
      p.have_op = true;
      p.lvl = 0;
      p.forwarded = false;
      ++p.op_seq;
      prefetch_hinted(p);
      t += gap_ps(p.op.gap);
      p.op_start = t;
    }
    if (t > limit) {
      p.t = t;
      resume_later(p, t);
      return;
    }
    // An op that waited for global time to reach the moment it needs the MBP restarts from
    // the time its attempt began, so its cache latencies are not charged twice.
    if (p.synced) t = p.attempt_t;
    p.synced = false;
    p.attempt_t = t;
    const Outcome o = execute(p, t, now);
    if (o == Outcome::Done) {
      finish_op(p, t);
      if (!failure_.empty()) return;
      continue;
    }
    if (o == Outcome::Sync) {
      p.synced = true;
      p.t = t;
      resume_later(p, t);
      return;
    }
    p.t = std::max(p.t, std::min(t, now));
    return;
  }
}

// The driver named a later op (MemOp::ahead, kAheadOps on): ask the host's caches for its
// block's L1 set and its page's frame, and kAheadOps / 2 ops later, for a store, for the L2 line
// it writes through to, which the L1 line (by then arrived) names. So those misses overlap the
// work of the ops before it instead of stalling it (with one op between the L1 set's prefetch
// and its read, that read still stalled). Only where a recent translation knows the page's
// frame; a stale guess prefetches the wrong lines and nothing else. (The count is also what
// keeps the compiler from deleting the call: a function that only prefetches counts as free of
// side effects, and its calls as dead code.)
void System::prefetch_hinted(Proc& p) {
  uint64_t& named = p.store_ahead[p.op_seq % p.store_ahead.size()];
  if (named != Proc::kNoBlock) {  // the store named kAheadOps / 2 ops ago
    if (const node::Cache::Line* l = p.l1.find(named)) __builtin_prefetch(p.l2.at(l->link), 1);
    named = Proc::kNoBlock;
  }
  if (p.op.ahead == MemOp::Ahead::Unknown) return;
  const uint64_t addr = p.op.ahead_addr;
  const uint64_t page = addr >> page_shift_;
  const Proc::HintPage& h = p.hint_pages[page & 3];
  if (h.page != page) return;
  const uint64_t pblk = h.fno * blocks_per_page_ + ((addr >> block_shift_) & (blocks_per_page_ - 1));
  ++prefetched_;
  __builtin_prefetch(h.frame);
  p.l1.prefetch(pblk);
  if (p.op.ahead == MemOp::Ahead::Store) named = pblk;
}

void System::finish_op(Proc& p, uint64_t t) {
  p.have_op = false;
  p.t = std::max(p.t, t);
  ++ops_completed_;
  if (mutant::on(mutant::Id::CopyPerReference)) mutant::wasted_copy();
  if (p.lvl == 1 && (p.op.kind == OpKind::Load || p.op.kind == OpKind::Store)) {
    // An L1 hit, the common case: the same counters as below, without walking the levels.
    (p.op.kind == OpKind::Load ? st_.loads : st_.stores)->inc();
    p.l1_hits->inc();
    p.op.level = 1;
    p.driver->complete(p.node, p.id, p.op, t);
    return;
  }
  Node& nd = *node_[p.node];
  if (p.lvl == kLvlWriteBuffer) {
    st_.stores->inc();
    nd.wb_stores->inc();
  } else if (p.op.kind == OpKind::Load || p.op.kind == OpKind::Store) {
    (p.op.kind == OpKind::Load ? st_.loads : st_.stores)->inc();
    if (p.lvl >= 2) p.l1_misses->inc();  // (an L1 hit took the short path above)
    if (p.lvl == 2) p.l2_hits->inc();
    else if (p.lvl >= 3) p.l2_misses->inc();
    if (p.lvl == 3) nd.node_hits->inc();
    if (p.lvl == 4) nd.remote->inc();
  } else if (p.op.kind == OpKind::Atomic) {
    st_.atomics->inc();
  } else if (p.op.kind == OpKind::Fence) {
    st_.fences->inc();
  } else {
    st_.switches_requested->inc();
  }
  if (p.lvl == 4) st_.op_latency_remote->sample(t - p.op_start);
  p.op.level = p.lvl >= 1 && p.lvl <= 4 ? static_cast<uint8_t>(p.lvl) : 0;
  p.driver->complete(p.node, p.id, p.op, t);
}

System::Outcome System::execute(Proc& p, uint64_t& t, uint64_t now) {
  MemOp& op = p.op;
  switch (op.kind) {
    case OpKind::Load: return exec_load(p, t, now);
    case OpKind::Store: return exec_store(p, t, now);
    case OpKind::Fence:
      if (!p.wb.empty() && !mutant::on(mutant::Id::FenceIgnoresWriteBuffer)) {
        block_proc(p, now, "fence: write buffer draining");
        p.waiting = WaitKind::WriteBuffer;
        return Outcome::Wait;
      }
      t += cpu_ps_;
      return Outcome::Done;
    case OpKind::Atomic:
    case OpKind::SetProtocol: {
      // Atomics order like a full fence: earlier buffered stores are performed first.
      if (!p.wb.empty()) {
        block_proc(p, now, "atomic: write buffer draining");
        p.waiting = WaitKind::WriteBuffer;
        return Outcome::Wait;
      }
      Frame* f = translate(p, op.addr / nc_.page_bytes, t);
      if (t > now) return Outcome::Sync;
      Msg* m = proc_request(op.kind == OpKind::Atomic ? MsgType::Atomic : MsgType::SetProto, p, f,
                            op.addr / nc_.block_bytes);
      if (op.kind == OpKind::SetProtocol) m->proto = op.proto;
      m->atomic = op.atomic;
      m->aoff = static_cast<uint32_t>(op.addr % nc_.block_bytes);
      p.lvl = 4;
      block_proc(p, now, op.kind == OpKind::Atomic ? "atomic at the home" : "protocol switch at the home");
      uint64_t at = now;
      bus_op(p.node, p.bus, BusOp::Kind::RequestData, paddr_of(f, static_cast<uint32_t>((op.addr / nc_.block_bytes) % blocks_per_page_)), at, m->data, m);
      return Outcome::Wait;
    }
  }
  return Outcome::Done;
}

System::Addr System::decode(uint64_t addr) const {
  const uint64_t nblk = addr >> block_shift_;
  return Addr{addr >> page_shift_, nblk, static_cast<uint32_t>(addr & (nc_.block_bytes - 1)),
              static_cast<uint32_t>(nblk & (blocks_per_page_ - 1))};
}

System::Outcome System::exec_load(Proc& p, uint64_t& t, uint64_t now) {
  MemOp& op = p.op;
  Node& nd = *node_[p.node];
  const Addr a = decode(op.addr);  // (named copies: C++17 lambdas cannot capture bindings)
  const uint64_t page = a.page, nblk = a.nblk;
  const uint32_t boff = a.boff, bi = a.bi;
  Frame* f = translate(p, page, t);
  const uint64_t pblk = f->frame_no * blocks_per_page_ + bi;
  const uint64_t paddr = f->frame_no * nc_.page_bytes + bi * nc_.block_bytes;
  auto done = [&](const uint8_t* block, uint8_t lvl) {
    copy_bytes(op.data, block + boff, op.size);
    if (p.lvl < lvl) p.lvl = lvl;
    if (!p.wb.empty()) {
      bool any = false;
      forward_wb(p, nblk, boff, op.size, op.data, &any);
      if (any) {
        nd.wb_forwards->inc();
        p.forwarded = true;
      }
    }
    if (mc_.check_invariants && !p.forwarded && f->proto == Protocol::Invalidate)
      check_value(nblk, boff, op.size, op.data, "load");
    return Outcome::Done;
  };
  if (f->proto == Protocol::NonCacheable) {
    // Non-cacheable: never in L1/L2; the home's memory is the only copy.
    uint64_t at = t;
    if (bus_op(p.node, p.bus, BusOp::Kind::ReadUncached, paddr, at, p.bus.line.data()) != BusOp::Supplier::Claimed) {
      t = at;
      return done(p.bus.line.data(), 3);
    }
    if (t > now) return Outcome::Sync;
    Msg* m = proc_request(MsgType::ReadH, p, f, nblk);
    p.lvl = 4;
    block_proc(p, now, "non-cacheable read at the home");
    at = now;
    bus_op(p.node, p.bus, BusOp::Kind::Request, paddr, at, nullptr, m);
    return Outcome::Wait;
  }
  if (node::Cache::Line* l = p.l1.find(pblk)) {
    p.l1.touch(l);
    t += nc_.l1_latency * cpu_ps_;
    return done(p.l1.data(l), 1);
  }
  t += nc_.l1_latency * cpu_ps_;
  if (node::Cache::Line* l = p.l2.find(pblk)) {
    p.l2.touch(l);
    t += nc_.l2_latency * cpu_ps_;
    node::Cache::Line* l1 = p.l1.victim(pblk);
    l1->blk = pblk;
    l1->link = p.l2.index_of(l);
    l1->state = l->state >= kL2E ? kL1Write : kL1Read;
    p.l1.touch(l1);
    copy_bytes(p.l1.data(l1), p.l2.data(l), nc_.block_bytes);
    return done(p.l2.data(l), 2);
  }
  t += nc_.l2_latency * cpu_ps_;
  // The node bus: another L2, the bank (home memory or the L3 copy), or the MBP claims it.
  uint64_t at = t;
  if (bus_op(p.node, p.bus, BusOp::Kind::Read, paddr, at, p.bus.line.data()) == BusOp::Supplier::Claimed) {
    if (t > now) return Outcome::Sync;
    return ask_mbp(p, f, bi, false, now);
  }
  t = at;
  fill_caches(p, pblk, p.bus.line.data(), p.bus.cmd->granted, t);
  return done(p.bus.line.data(), 3);
}

System::Outcome System::exec_store(Proc& p, uint64_t& t, uint64_t now) {
  MemOp& op = p.op;
  const Addr a = decode(op.addr);  // (named copies: C++17 lambdas cannot capture bindings)
  const uint64_t page = a.page, nblk = a.nblk;
  const uint32_t boff = a.boff, bi = a.bi;
  Frame* f = translate(p, page, t);
  if (f->proto != Protocol::Invalidate) return exec_wb_store(p, t, now);
  const uint64_t pblk = f->frame_no * blocks_per_page_ + bi;
  const uint64_t paddr = f->frame_no * nc_.page_bytes + bi * nc_.block_bytes;
  // `l1`: the block's L1 line when the caller found it.
  auto write = [&](node::Cache::Line* l2, uint8_t lvl, node::Cache::Line* l1) {
    l2->state = kL2M;
    p.l2.touch(l2);
    copy_bytes(p.l2.data(l2) + boff, op.data, op.size);  // L1 writes through to L2
    if (!l1) l1 = p.l1.find(pblk);
    if (l1) {
      copy_bytes(p.l1.data(l1) + boff, op.data, op.size);
    } else {
      l1 = p.l1.victim(pblk);
      l1->blk = pblk;
      l1->link = p.l2.index_of(l2);
      copy_bytes(p.l1.data(l1), p.l2.data(l2), nc_.block_bytes);
    }
    l1->state = kL1Write;
    p.l1.touch(l1);
    if (p.lvl < lvl) p.lvl = lvl;
    if (mc_.check_invariants) {
      golden_write(nblk, boff, op.size, op.data);
      check_swmr(p.node, static_cast<int>(p.id), nblk);
    }
    return Outcome::Done;
  };
  if (node::Cache::Line* l = p.l1.find(pblk); l && l->state == kL1Write) {
    t += nc_.l1_latency * cpu_ps_;
    // The L1 line knows where its block sits in the L2 (inclusion keeps it there while the L1
    // holds the block): one host line read instead of the set's ways.
    node::Cache::Line* l2 = p.l2.at(l->link);
    if (!l2 || l2->blk != pblk || !l2->state) l2 = p.l2.find(pblk);
    return write(l2, 1, l);
  }
  t += nc_.l1_latency * cpu_ps_;
  node::Cache::Line* own = p.l2.find(pblk);
  if (own && own->state >= kL2E) {
    t += nc_.l2_latency * cpu_ps_;
    return write(own, 2, nullptr);
  }
  t += nc_.l2_latency * cpu_ps_;
  // Read-exclusive (or upgrade) on the bus: other L2 copies go, an M copy first lands in the
  // frame; or the MBP claims it.
  uint64_t at = t;
  if (bus_op(p.node, p.bus, own ? BusOp::Kind::Upgrade : BusOp::Kind::ReadExclusive, paddr, at, own ? nullptr : p.bus.line.data()) ==
      BusOp::Supplier::Claimed) {
    if (t > now) return Outcome::Sync;
    return ask_mbp(p, f, bi, true, now);
  }
  t = at;
  if (!own) {
    fill_caches(p, pblk, p.bus.line.data(), kL2E, t);
    own = p.l2.find(pblk);
  }
  return write(own, 3, nullptr);
}

// Stores to update and non-cacheable pages go through the write buffer to the home, which
// orders them, writes memory and (update pages) multicasts them; the entry retires on the
// home's acknowledgement. Stores to a block already buffered and not yet sent merge into it.
System::Outcome System::exec_wb_store(Proc& p, uint64_t& t, uint64_t now) {
  MemOp& op = p.op;
  const uint64_t nblk = op.addr / nc_.block_bytes;
  const uint32_t boff = static_cast<uint32_t>(op.addr % nc_.block_bytes);
  auto merge = [&](WbEntry& e) {
    std::memcpy(&e.data[boff], op.data, op.size);
    for (uint32_t i = 0; i < op.size; ++i) mask_set(e.mask, boff + i);
  };
  bool in_flight = false;
  for (WbEntry& e : p.wb) {
    if (e.nblk != nblk) continue;
    if (!e.in_flight) {
      merge(e);
      t += cpu_ps_;
      p.lvl = kLvlWriteBuffer;
      return Outcome::Done;
    }
    in_flight = true;
  }
  if (p.wb.size() >= mc_.write_buffer) {
    block_proc(p, now, "write buffer full");
    p.waiting = WaitKind::WriteBuffer;
    return Outcome::Wait;
  }
  if (!in_flight && t > now) return Outcome::Sync;
  WbEntry e;
  e.nblk = nblk;
  e.id = next_wb_id_++;
  merge(e);
  p.wb.push_back(std::move(e));
  t += cpu_ps_;
  p.lvl = kLvlWriteBuffer;
  if (!in_flight) issue_wb(p, p.wb.size() - 1, now);
  return Outcome::Done;
}

void System::issue_wb(Proc& p, size_t idx, uint64_t now) {
  WbEntry& e = p.wb[idx];
  e.in_flight = true;
  const uint64_t page = e.nblk / blocks_per_page_;
  Frame* f = frame_for(p.node, page, true);
  Msg* m = proc_request(MsgType::WriteH, p, f, e.nblk);
  m->op_id = e.id;
  m->mask = e.mask;
  std::memcpy(m->data, e.data.data(), nc_.block_bytes);
  // One bus write carries the bytes to the MBP.
  uint64_t at = now;
  bus_op(p.node, p.bus, BusOp::Kind::RequestData, paddr_of(f, static_cast<uint32_t>(e.nblk % blocks_per_page_)), at, m->data, m);
}

// A request of processor p to the home of frame f's page, about block nblk.
Msg* System::proc_request(MsgType t, Proc& p, Frame* f, uint64_t nblk) {
  Msg* m = new_msg(t, p.node, f->home_node);
  m->requester = p.node;
  m->proc = p.id;
  m->op_id = p.op_seq;
  m->nblk = nblk;
  m->proto = f->proto;
  return m;
}

// The node cannot serve a load (write: a store) of block bi: the home's own processor asks
// its directory over the bus, another node's goes through the remote controller.
System::Outcome System::ask_mbp(Proc& p, Frame* f, uint32_t bi, bool write, uint64_t now) {
  p.lvl = 4;
  if (!f->home) {
    remote_request(p, f, bi, write ? REvent::Store : REvent::Load);
    return Outcome::Wait;
  }
  Msg* m = proc_request(write ? MsgType::GetX : MsgType::GetS, p, f, f->npage * blocks_per_page_ + bi);
  block_proc(p, now, write ? "local write of a block shared or owned elsewhere" : "local read of a block owned elsewhere");
  uint64_t at = now;
  bus_op(p.node, p.bus, BusOp::Kind::Request, paddr_of(f, bi), at, nullptr, m);
  return Outcome::Wait;
}

void System::wb_retire(Proc& p, uint64_t id) {
  auto it = std::find_if(p.wb.begin(), p.wb.end(), [&](const WbEntry& e) { return e.id == id; });
  if (it == p.wb.end()) internal_error("write acknowledgement for an unknown write-buffer entry");
  const uint64_t nblk = it->nblk;
  p.wb.erase(it);
  for (size_t i = 0; i < p.wb.size(); ++i)
    if (p.wb[i].nblk == nblk && !p.wb[i].in_flight) {
      issue_wb(p, i, now_ps());
      break;
    }
  if (p.waiting == WaitKind::WriteBuffer) {
    unblock(p);
    resume_later(p, now_ps());
  }
}

}  // namespace mbpsim::mbp
