#include "models/mbcf/engine.h"

#include "models/core/mutant.h"

#include <algorithm>
#include <cstring>

#include "models/mbcf/atomic.h"
#include "models/mbcf/packet.h"

namespace mbpsim::mbcf {

namespace {

using layout::kWrapMark;

uint32_t round4(uint32_t n) { return (n + 3) & ~3u; }

// One packet's execution: every write goes through here so a half-done lump can be undone.
class Lump {
 public:
  Lump(TaskSpace& ts, Task& t) : ts_(ts), t_(t) {}

  // Returns false (and sets the failure) when the range cannot be used.
  bool ok(uint32_t laddr, uint32_t n, uint8_t perm) {
    bool present = true;
    uint32_t pg = 0;
    const ViolationCode v = ts_.check(t_, laddr, n, perm, &present, &pg);
    if (v != ViolationCode::None) {
      violation = v;
      return false;
    }
    if (!present) {
      fault = true;
      fault_page = pg;
      return false;
    }
    return true;
  }
  void write(uint32_t laddr, const uint8_t* in, uint32_t n) {
    Undo u{laddr, std::vector<uint8_t>(n)};
    ts_.read(t_, laddr, u.old.data(), n);
    undo_.push_back(std::move(u));
    ts_.write(t_, laddr, in, n);
  }
  void store32(uint32_t laddr, uint32_t v) {
    uint8_t b[4];
    store_le(b, 4, v);
    write(laddr, b, 4);
  }
  uint32_t load32(uint32_t laddr) const { return ts_.load32(t_, laddr); }
  void read(uint32_t laddr, uint8_t* out, uint32_t n) const { ts_.read(t_, laddr, out, n); }
  void rollback() {
    if (ts_.discard_buffered()) {  // nothing reached the frames (a NIC's buffered writes)
      undo_.clear();
      return;
    }
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) ts_.write(t_, it->laddr, it->old.data(), static_cast<uint32_t>(it->old.size()));
    undo_.clear();
  }
  TaskSpace& ts() { return ts_; }
  Task& task() { return t_; }

  // FIFOe stopped state per sender (Task::fifoe_stopped): changes wait for the lump to
  // complete (a failed lump leaves none), and later commands of the lump see them.
  using StopKey = std::tuple<uint32_t, uint32_t, uint32_t>;
  bool stopped(const StopKey& k) const {
    for (auto it = stop_changes_.rbegin(); it != stop_changes_.rend(); ++it)
      if (it->first == k) return it->second;
    return t_.fifoe_stopped.count(k) != 0;
  }
  bool any_stopped(uint32_t fifo) const {
    for (const auto& k : t_.fifoe_stopped)
      if (std::get<0>(k) == fifo && stopped(k)) return true;
    for (const auto& c : stop_changes_)
      if (std::get<0>(c.first) == fifo && stopped(c.first)) return true;
    return false;
  }
  void set_stopped(const StopKey& k, bool v) { stop_changes_.emplace_back(k, v); }
  void clear_stopped(uint32_t fifo) {
    for (const auto& k : t_.fifoe_stopped)
      if (std::get<0>(k) == fifo && stopped(k)) set_stopped(k, false);
  }
  void commit() {
    for (const auto& [k, v] : stop_changes_) {
      if (v) t_.fifoe_stopped.insert(k);
      else t_.fifoe_stopped.erase(k);
    }
    stop_changes_.clear();
  }

  ViolationCode violation = ViolationCode::None;
  bool fault = false;
  uint32_t fault_page = 0;

 private:
  struct Undo {
    uint32_t laddr;
    std::vector<uint8_t> old;
  };
  TaskSpace& ts_;
  Task& t_;
  std::vector<Undo> undo_;
  std::vector<std::pair<StopKey, bool>> stop_changes_;
};

struct FifoHdr {
  uint32_t top, head, tail, end, flags;
};

// Reads and checks a FIFO structure (and its whole buffer) for use by the kernel.
bool fifo_read(Lump& L, uint32_t at, FifoHdr& h) {
  if (at % 4 || !L.ok(at, layout::kFifoBytes, kPermRW)) return false;
  h = {L.load32(at), L.load32(at + 4), L.load32(at + 8), L.load32(at + 12), L.load32(at + 16)};
  const bool sane = h.top % 4 == 0 && h.end % 4 == 0 && h.head % 4 == 0 && h.tail % 4 == 0 && h.top < h.end &&
                    h.head >= h.top && h.head < h.end && h.tail >= h.top && h.tail < h.end && h.end - h.top >= 16;
  if (!sane) {
    L.violation = ViolationCode::BadStructure;
    return false;
  }
  return L.ok(h.top, h.end - h.top, kPermRW);
}

// Stores one entry (the concatenation of `parts`). Returns false if the FIFO is full.
bool fifo_push(Lump& L, uint32_t at, FifoHdr& h, const std::vector<std::pair<const uint8_t*, uint32_t>>& parts) {
  uint32_t len = 0;
  for (const auto& p : parts) len += p.second;
  const uint32_t e = 4 + round4(len);
  uint32_t pos;
  if (h.tail >= h.head) {
    if (h.tail + e + 4 <= h.end) {
      pos = h.tail;
    } else if (h.top + e < h.head) {
      L.store32(h.tail, kWrapMark);
      pos = h.top;
    } else {
      return false;
    }
  } else {
    if (h.tail + e < h.head) pos = h.tail;
    else return false;
  }
  L.store32(pos, len);
  uint32_t w = pos + 4;
  for (const auto& p : parts) {
    if (p.second) L.write(w, p.first, p.second);
    w += p.second;
  }
  static const uint8_t zero[4] = {};
  if (round4(len) != len) L.write(w, zero, round4(len) - len);
  h.tail = pos + e;
  L.store32(at + 8, h.tail);
  return true;
}

Command reply_for(const Command& c, Status st) {
  Command r;
  r.cmd = Cmd::Reply;
  r.opt.emb = c.opt.emb;
  r.opt.emb_colour = c.opt.emb_colour;
  r.status_laddr = c.opt.reply != ReplyMode::None ? c.status_laddr : kNoAddr;
  r.status = static_cast<uint32_t>(st);
  return r;
}

bool wants_reply(const Command& c, Status st) {
  return replies_with_data(c.cmd) || c.opt.emb || c.opt.reply == ReplyMode::Status ||
         (c.opt.reply == ReplyMode::OnlyFailures && is_failure(st));
}

}  // namespace

Status atomic_effect(const Command& c, uint32_t ref, uint8_t* mem) {
  if (c.cmd == Cmd::CompSwap && ref != c.flag_value) return Status::CompareFailed;
  // The shared atomic semantics, applied to the target in 32-bit words (SPARC words).
  std::vector<uint8_t> old(c.length);
  for (uint32_t off = 0; off + 4 <= c.length;) {
    AtomicArgs a;
    a.width = 4;
    if (c.cmd == Cmd::FetchAdd) {
      a.op = AtomicOp::FetchAddVec;
      a.count = static_cast<uint8_t>(std::min<uint32_t>(8, (c.length - off) / 4));
    } else {
      a.op = AtomicOp::Swap;
      a.count = 1;
    }
    for (int i = 0; i < a.count; ++i) a.operand[i] = load_le(c.data.data() + off + 4 * i, 4);
    apply_atomic(a, mem + off, old.data() + off);
    off += a.bytes();
  }
  return Status::Succeeded;
}

namespace {

// Runs one command of the lump. Returns false on violation or page fault (L says which).
bool run(Lump& L, const Packet& p, const Command& c, ExecResult& r) {
  Task& t = L.task();
  TaskSpace& ts = L.ts();
  Status st = Status::Succeeded;
  std::vector<uint8_t> rdata;
  switch (c.cmd) {
    case Cmd::Write:
      if (!L.ok(c.laddr, c.length, kPermWrite)) return false;
      L.write(c.laddr, c.data.data(), c.length);
      r.data_bytes += c.length;
      break;
    case Cmd::WriteF:
      if (!L.ok(c.laddr, c.length, kPermWrite) || !L.ok(c.flag_laddr, 4, kPermWrite)) return false;
      L.write(c.laddr, c.data.data(), c.length);
      L.store32(c.flag_laddr, c.flag_value);
      r.data_bytes += c.length + 4;
      break;
    case Cmd::Read:
      if (!L.ok(c.laddr, c.length, kPermRead)) return false;
      rdata.resize(c.length);
      L.read(c.laddr, rdata.data(), c.length);
      r.data_bytes += c.length;
      r.read_after_writes = ts.buffer_mark();
      break;
    case Cmd::Swap:
    case Cmd::FetchAdd:
    case Cmd::CompSwap: {
      if (c.length == 0 || c.length % 4) {
        L.violation = ViolationCode::BadLength;
        return false;
      }
      if (ts.page_of(c.laddr) != ts.page_of(c.laddr + c.length - 1)) {
        L.violation = ViolationCode::PageCrossing;
        return false;
      }
      if (!L.ok(c.laddr, c.length, kPermRW)) return false;
      if (c.cmd == Cmd::CompSwap && !L.ok(c.flag_laddr, 4, kPermRead)) return false;
      rdata.resize(c.length);
      L.read(c.laddr, rdata.data(), c.length);
      std::vector<uint8_t> mem(rdata);
      st = atomic_effect(c, c.cmd == Cmd::CompSwap ? L.load32(c.flag_laddr) : 0, mem.data());
      if (st != Status::Succeeded) break;  // nothing changes; the current contents go back
      L.write(c.laddr, mem.data(), c.length);
      r.data_bytes += 2 * c.length;
      break;
    }
    case Cmd::Update:
    case Cmd::Invalidate: {
      const uint32_t page = ts.page_of(c.laddr);
      const uint32_t n = c.cmd == Cmd::Update ? c.length : 0;
      if (c.cmd == Cmd::Update && page != ts.page_of(c.laddr + (n ? n - 1 : 0))) {
        L.violation = ViolationCode::PageCrossing;
        return false;
      }
      if (!L.ok(c.laddr, n ? n : 1, c.cmd == Cmd::Update ? kPermWrite : kPermRead)) return false;
      Pte& pte = t.pages.at(page);
      if (!pte.in_pattern) {
        L.violation = ViolationCode::BadStructure;
        return false;
      }
      if (c.cmd == Cmd::Update) {
        L.write(c.laddr, c.data.data(), n);
        r.data_bytes += n;
      } else {
        pte.valid = false;
      }
      const uint32_t in_page = c.laddr & (ts.page_bytes() - 1);
      for (const PageRef& ch : pte.children) {
        Forward f;
        f.to = ch;
        f.cmd = c;
        f.cmd.laddr = ch.laddr + in_page;
        r.forwards.push_back(std::move(f));
      }
      break;
    }
    case Cmd::Fifo:
    case Cmd::FifoeNormal:
    case Cmd::FifoeRetry: {
      FifoHdr h;
      if (!fifo_read(L, c.laddr, h)) return false;
      ++r.structures;
      r.structure_reads.push_back({c.laddr, layout::kFifoBytes});
      // FIFOe: the stopped state is this sender's (4.1, "for the commands from a given
      // requestor"); the structure's flag bit 0 tells the owner that some sender is stopped.
      const Lump::StopKey who{c.laddr, p.src_pnode, p.src_ptask};
      if (c.cmd != Cmd::Fifo && !(h.flags & 1)) L.clear_stopped(c.laddr);  // the owner reset it
      const bool shared = mutant::on(mutant::Id::FifoeStopShared);
      const bool stopped = c.cmd != Cmd::Fifo && (shared ? L.any_stopped(c.laddr) : L.stopped(who));
      if (c.cmd == Cmd::FifoeNormal && stopped) {
        st = Status::FifoeStopped;
        break;
      }
      if (fifo_push(L, c.laddr, h, {{c.data.data(), c.length}})) {
        if (c.cmd == Cmd::FifoeRetry && stopped) {
          if (shared) L.clear_stopped(c.laddr);
          L.set_stopped(who, false);
          if (!L.any_stopped(c.laddr)) L.store32(c.laddr + 16, L.load32(c.laddr + 16) & ~1u);
        }
        r.data_bytes += c.length;
      } else if (c.cmd == Cmd::Fifo) {
        st = Status::FifoFull;
      } else if (stopped) {
        st = Status::FifoeStopped;  // a RETRY that still finds no room: stays stopped
      } else {
        L.set_stopped(who, true);
        L.store32(c.laddr + 16, L.load32(c.laddr + 16) | 1u);
        st = Status::FifoeStoppedNow;
      }
      break;
    }
    case Cmd::Signal: {
      const uint32_t s = c.laddr;
      if (s % 4 || !L.ok(s, layout::kSignalBytes, kPermRW)) return false;
      const uint32_t inv = L.load32(s), sto = L.load32(s + 4), cond = L.load32(s + 8);
      const uint32_t running = L.load32(s + 12), dsp = L.load32(s + 16), buf = L.load32(s + 20),
                     bufsz = L.load32(s + 24), fifo = L.load32(s + 28);
      if (inv > 6 || sto > 3 || cond > 3) {
        L.violation = ViolationCode::BadStructure;
        return false;
      }
      ++r.structures;
      r.structure_reads.push_back({s, layout::kSignalBytes});
      const auto I = static_cast<SigInvoke>(inv);
      const auto S = static_cast<SigStore>(sto);
      const auto C = static_cast<SigCond>(cond);
      if (I == SigInvoke::None) {
        st = Status::SignalStopped;
        break;
      }
      if ((C == SigCond::EveryTimeBlk || C == SigCond::FirstOnlyBlk) && running > 0) {
        st = Status::SignalCondition;
        break;
      }
      if ((I == SigInvoke::UlsInvoke || I == SigInvoke::DspByUls) && !t.uls_pc) {
        st = Status::SignalCondition;  // no user-level scheduler enrolled
        break;
      }
      // The record: requester information, then the data (MEMW_SSP: the data alone).
      uint8_t info[12];
      store_le(info, 4, p.src_pnode);
      store_le(info + 4, 4, p.src_ptask);
      store_le(info + 8, 4, c.length);
      const bool bare = I == SigInvoke::MemwSsp;
      const uint32_t rec = (bare ? 0 : 12) + c.length;
      switch (S) {
        case SigStore::Nonw: break;
        case SigStore::Quew: {
          FifoHdr h;
          if (!fifo_read(L, fifo, h)) return false;
          ++r.structures;
          r.structure_reads.push_back({fifo, layout::kFifoBytes});
          if (!fifo_push(L, fifo, h, {{bare ? nullptr : info, bare ? 0u : 12u}, {c.data.data(), c.length}})) st = Status::FifoFull;
          break;
        }
        case SigStore::Memw:
        case SigStore::MemwOffset: {
          const uint32_t off = S == SigStore::MemwOffset ? c.offset : 0;
          if (static_cast<uint64_t>(off) + rec > bufsz) {
            L.violation = ViolationCode::BadStructure;  // outside the area the structure allows
            return false;
          }
          if (!L.ok(buf + off, rec, kPermWrite)) return false;
          if (!bare) L.write(buf + off, info, 12);
          if (c.length) L.write(buf + off + (bare ? 0 : 12), c.data.data(), c.length);
          break;
        }
      }
      if (st != Status::Succeeded) break;
      if (S != SigStore::Nonw) r.data_bytes += rec;  // the record stored: its requester information and the data
      if (I == SigInvoke::Polling) break;
      if (C == SigCond::FirstOnlyNonblk && running > 0 && !mutant::on(mutant::Id::FirstOnlyInvokesAgain)) break;  // stored; no second invocation
      L.store32(s + 12, running + 1);
      Invocation iv;
      iv.ptask = t.ptask;
      iv.signal_laddr = s;
      iv.cond = C;
      switch (I) {
        case SigInvoke::UlsInvoke: iv.kind = Invocation::Uls; iv.pc = *t.uls_pc; break;
        case SigInvoke::DspByUls: iv.kind = Invocation::DspByUls; iv.pc = *t.uls_pc; iv.dsp_pc = dsp; break;
        case SigInvoke::DspInvoke: iv.kind = Invocation::Dsp; iv.pc = dsp; break;
        default: iv.kind = Invocation::Ssp; iv.pc = c.ssp_pc; break;
      }
      r.invocations.push_back(iv);
      break;
    }
    case Cmd::ZBuffer:
      if (!L.ok(c.laddr, c.length, kPermWrite) || !L.ok(c.flag_laddr, 4, kPermRW)) return false;
      if (L.load32(c.flag_laddr) > c.flag_value) {
        L.write(c.laddr, c.data.data(), c.length);
        L.store32(c.flag_laddr, c.flag_value);
        r.data_bytes += c.length + 4;
      }
      break;
    case Cmd::ZBufPacked: {
      const uint32_t es = c.flag_value, n = c.length;
      if (!L.ok(c.laddr, n * es, kPermWrite) || !L.ok(c.flag_laddr, 4 * n, kPermRW)) return false;
      for (uint32_t i = 0; i < n; ++i) {
        const uint8_t* e = c.data.data() + i * (4 + es);
        const uint32_t ref = static_cast<uint32_t>(load_le(e, 4));
        if (L.load32(c.flag_laddr + 4 * i) > ref) {
          L.write(c.laddr + i * es, e + 4, es);
          L.store32(c.flag_laddr + 4 * i, ref);
          r.data_bytes += es + 4;
        }
      }
      break;
    }
    case Cmd::WriteTaskque: {
      if (!t.has_taskque) {
        st = Status::NoTaskque;
        break;
      }
      if (t.taskque.size() >= t.taskque_capacity) {
        st = Status::TaskqueFull;
        break;
      }
      std::vector<uint8_t> e(12 + c.length);
      store_le(e.data(), 4, p.src_pnode);
      store_le(e.data() + 4, 4, p.src_ptask);
      store_le(e.data() + 8, 4, p.src_key);
      if (c.length) std::memcpy(e.data() + 12, c.data.data(), c.length);
      t.taskque.push_back(std::move(e));  // kernel space: not part of the undo log (last in a lump)
      r.data_bytes += c.length;
      break;
    }
    case Cmd::Reply: {
      if (c.data_laddr != kNoAddr && c.length) {
        if (!L.ok(c.data_laddr, c.length, kPermWrite)) return false;
        L.write(c.data_laddr, c.data.data(), c.length);
        r.data_bytes += c.length;
      }
      if (c.status_laddr != kNoAddr) {
        if (!L.ok(c.status_laddr, 4, kPermWrite)) return false;
        L.store32(c.status_laddr, c.status);
      }
      if (c.opt.emb) ++t.emb_replies[c.opt.emb_colour & 15];
      r.statuses.push_back(static_cast<Status>(c.status));
      return true;
    }
    case Cmd::Violation:
      if (c.status_laddr != kNoAddr) {
        if (!L.ok(c.status_laddr, 4, kPermWrite)) return false;
        L.store32(c.status_laddr, static_cast<uint32_t>(Status::Violation));
      }
      r.statuses.push_back(Status::Violation);
      return true;
    case Cmd::Ack:
      L.violation = ViolationCode::BadCombination;  // acks belong to the kernel, not a task
      return false;
  }
  r.statuses.push_back(st);
  if (wants_reply(c, st) && !(is_multicast(c.cmd) && !r.forwards.empty())) {
    Command rep = reply_for(c, st);
    if (replies_with_data(c.cmd)) {
      rep.data_laddr = c.data_laddr;
      rep.length = static_cast<uint32_t>(rdata.size());
      rep.data = std::move(rdata);
    }
    r.replies.push_back(std::move(rep));
  } else if (wants_reply(c, st)) {
    r.deferred = reply_for(c, st);  // after the pattern's pages have acknowledged
  }
  return true;
}

// 4.4: one target per packet is implied by the format; the rest is checked here.
bool combination_ok(const TaskSpace& ts, const Task& t, const Packet& p) {
  if (p.cmds.size() <= 1) return true;
  uint32_t data_replies = 0;
  bool any_mc = false, any_plain = false;
  uint32_t pattern = 0;
  bool have_pattern = false;
  for (const Command& c : p.cmds) {
    if (is_atomic(c.cmd)) return false;
    if (c.cmd == Cmd::Reply || c.cmd == Cmd::Violation) continue;
    if (replies_with_data(c.cmd)) ++data_replies;
    if (is_multicast(c.cmd)) {
      any_mc = true;
      auto it = t.pages.find(ts.page_of(c.laddr));
      const uint32_t pid = it == t.pages.end() ? 0xFFFFFFFFu : it->second.pattern_id;
      if (have_pattern && pid != pattern) return false;
      pattern = pid;
      have_pattern = true;
    } else {
      any_plain = true;
    }
  }
  if (any_mc && any_plain) return false;
  return data_replies <= 1 && reply_packet_bytes(p.cmds) <= kMaxPacketBytes;
}

}  // namespace

ExecResult execute(TaskSpace& ts, const Packet& p, uint32_t max_reply_bytes) {
  ExecResult r;
  Task* t = ts.find(p.dst_ptask);
  if (!t) {
    r.outcome = ExecResult::Outcome::NoTask;
    r.violation = ViolationCode::NoSuchTask;
    return r;
  }
  // 4.3: a client that does not know a server's access key reaches it with WRITE_TASKQUE, which
  // stores into the server's kernel-space TASKQUE only (with the client's Pnode, Ptask and key,
  // so that the server can answer and holds the client responsible). A packet of nothing but
  // WRITE_TASKQUEs needs no key; any other command with a wrong key refuses the whole packet.
  const bool keyless = !p.cmds.empty() && std::all_of(p.cmds.begin(), p.cmds.end(), [](const Command& c) { return c.cmd == Cmd::WriteTaskque; });
  if (t->key != p.dst_key && !keyless && !(mutant::on(mutant::Id::CombinedNoKeyCheck) && p.cmds.size() > 1)) {
    r.outcome = ExecResult::Outcome::BadKey;
    r.violation = ViolationCode::BadKey;
    return r;
  }
  if (!combination_ok(ts, *t, p)) {
    r.outcome = ExecResult::Outcome::Violation;
    r.violation = ViolationCode::BadCombination;
    return r;
  }
  // The reply must fit one packet (4.4). A well-behaved sender checks this before it sends;
  // the target does not rely on it (a READ of more than a frame would otherwise leave it with
  // a reply it cannot send).
  if (reply_packet_bytes(p.cmds) > max_reply_bytes && !mutant::on(mutant::Id::ReplySizeUnchecked)) {
    r.outcome = ExecResult::Outcome::Violation;
    r.violation = ViolationCode::BadLength;
    return r;
  }
  bool schedule = false;
  Lump L(ts, *t);
  for (size_t i = 0; i < p.cmds.size(); ++i) {
    schedule |= p.cmds[i].opt.schedule;
    if (!run(L, p, p.cmds[i], r)) {
      L.rollback();
      // Nothing of the commands before holds: a fresh result. (One object returned on every
      // path, so it is built in place; a second one made GCC 12 warn of a false
      // maybe-uninitialized in the move of `deferred`.)
      r = ExecResult{};
      if (L.fault) {
        r.outcome = ExecResult::Outcome::PageFault;
        r.fault_page = L.fault_page;
      } else {
        r.outcome = ExecResult::Outcome::Violation;
        r.violation = L.violation;
        r.violation_index = static_cast<uint32_t>(i);
      }
      return r;
    }
  }
  L.commit();
  if (schedule && t->blocked) {
    t->blocked = false;
    ++t->wakeups;
    r.woke = true;
  }
  return r;
}

std::optional<std::vector<uint8_t>> fifo_pop(TaskSpace& ts, Task& t, uint32_t fifo) {
  uint32_t head = ts.load32(t, fifo + 4);
  const uint32_t tail = ts.load32(t, fifo + 8), top = ts.load32(t, fifo);
  if (head == tail) return std::nullopt;
  uint32_t len = ts.load32(t, head);
  if (len == kWrapMark) {
    head = top;
    if (head == tail) return std::nullopt;
    len = ts.load32(t, head);
  }
  std::vector<uint8_t> out(len);
  ts.read(t, head + 4, out.data(), len);
  ts.store32(t, fifo + 4, head + 4 + round4(len));
  return out;
}

uint32_t fifo_entries(const TaskSpace& ts, const Task& t, uint32_t fifo) {
  uint32_t head = ts.load32(t, fifo + 4), n = 0;
  const uint32_t tail = ts.load32(t, fifo + 8), top = ts.load32(t, fifo);
  while (head != tail) {
    const uint32_t len = ts.load32(t, head);
    if (len == kWrapMark) {
      head = top;
      continue;
    }
    head += 4 + round4(len);
    ++n;
  }
  return n;
}

std::optional<std::vector<uint8_t>> signal_reset(TaskSpace& ts, Task& t, uint32_t signal) {
  if (static_cast<SigStore>(ts.load32(t, signal + 4)) == SigStore::Quew) {
    auto e = fifo_pop(ts, t, ts.load32(t, signal + 28));
    if (e) return e;
  }
  ts.store32(t, signal + 12, 0);
  return std::nullopt;
}

void signal_returned(TaskSpace& ts, Task& t, uint32_t signal) {
  const auto c = static_cast<SigCond>(ts.load32(t, signal + 8));
  const uint32_t running = ts.load32(t, signal + 12);
  if ((c == SigCond::EveryTimeBlk || c == SigCond::EveryTimeNonblk) && running > 0)
    ts.store32(t, signal + 12, running - 1);
}

std::optional<std::vector<uint8_t>> read_taskque(Task& t) {
  if (t.taskque.empty()) return std::nullopt;
  auto e = std::move(t.taskque.front());
  t.taskque.pop_front();
  return e;
}

void init_fifo(TaskSpace& ts, Task& t, uint32_t fifo, uint32_t buffer, uint32_t bytes) {
  ts.store32(t, fifo, buffer);
  ts.store32(t, fifo + 4, buffer);
  ts.store32(t, fifo + 8, buffer);
  ts.store32(t, fifo + 12, buffer + bytes);
  ts.store32(t, fifo + 16, 0);
}

void init_signal(TaskSpace& ts, Task& t, uint32_t s, SigInvoke inv, SigStore st, SigCond cond, uint32_t dsp_pc,
                 uint32_t buffer, uint32_t buffer_bytes, uint32_t fifo) {
  ts.store32(t, s, static_cast<uint32_t>(inv));
  ts.store32(t, s + 4, static_cast<uint32_t>(st));
  ts.store32(t, s + 8, static_cast<uint32_t>(cond));
  ts.store32(t, s + 12, 0);
  ts.store32(t, s + 16, dsp_pc);
  ts.store32(t, s + 20, buffer);
  ts.store32(t, s + 24, buffer_bytes);
  ts.store32(t, s + 28, fifo);
}

uint32_t reply_packet_bytes(const std::vector<Command>& cmds) {
  uint32_t bytes = kHeaderBytes;
  for (const Command& c : cmds) {
    if (c.cmd == Cmd::Reply || c.cmd == Cmd::Violation) continue;
    if (replies_with_data(c.cmd)) bytes += 4 + 20 + c.length;  // command word, parameters, data
    else if (c.opt.reply != ReplyMode::None || c.opt.emb) bytes += 24;
  }
  return bytes;
}

}  // namespace mbpsim::mbcf
