#include "workloads/trace/replay.h"

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <map>

#include "models/core/error.h"

namespace mbpsim {

using nlohmann::ordered_json;
using node::MemOp;
using node::OpKind;
using trace::Kind;

void declare_trace_params(ParamSchema& s) {
  using T = ParamType;
  s.add({"trace.path", T::String, "", "", "trace folder to replay (traces/FORMAT.md); relative to the config file that sets it, or to the working directory when set with --set"});
  s.add({"trace.placement", T::String, "spread", "",
         "where the threads run. spread: with no more threads than nodes, thread i on node floor(i x nodes / threads), evenly over the tree (16 threads on 64 nodes: nodes 0, 4, 8, ...), else thread i on node i mod nodes, processor i / nodes; pack: each node's processors filled first; single: every thread on node 0's first processor (the one-processor baseline; needs trace.multiplex); map: as trace.map says",
         -1e300, 1e300, {"spread", "pack", "single", "map"}});
  s.add({"trace.map", T::IntList, nlohmann::json::array(), "",
         "with trace.placement map: the processor of each thread, in thread order, numbered node x node.procs + processor (one entry per thread; two threads on one processor need trace.multiplex)",
         0, 1e9});
  s.add({"trace.sync", T::String, "simulated", "",
         "the order locks are granted in. simulated: first come in simulated time (whoever's compare&swap reaches the lock's home first; barriers, joins, pauses, semaphores and condition wake-ups still wait for what they waited for when captured); recorded: the captured acquisition order, exactly",
         -1e300, 1e300, {"simulated", "recorded"}});
  s.add({"trace.validate", T::Bool, true, "", "run `mbpsim trace validate` on the trace before replaying it"});
  s.add({"trace.multiplex", T::Bool, false, "", "allow more threads than processors: threads of one processor time-share it, switching when one blocks"});
  s.add({"trace.switch_cycles", T::Int, 500, "cycles", "a context switch between threads sharing a processor (save and restore registers, scheduler)", 0, 1e9});
  s.add({"trace.baseline_s", T::Double, 0.0, "s", "exec_time_s of the same trace on one processor (trace.placement single); when set, the summary gives the speedup", 0, 1e9});
}

std::string TraceReplay::trace_dir(const Config& c) {
  std::string path = c.get_string("trace.path");
  if (path.empty()) c.fail("trace.path", "workload.kind trace needs a trace folder");
  // A relative path in a config file is relative to that file; on the command line, to the
  // working directory.
  const std::string& from = c.origin_of("trace.path");
  if (path[0] != '/' && from != "--set" && from != "<defaults>") {
    const std::string dir = std::filesystem::path(from).parent_path().string();
    if (!dir.empty()) path = dir + "/" + path;
  }
  return path;
}

AddressUse TraceReplay::footprint(const Config& c, MemoryForecast& f) {
  const std::string dir = trace_dir(c);
  const trace::Meta m = trace::read_meta(dir);
  uint64_t streams = 0;
  for (uint32_t t = 0; t < m.threads; ++t) streams += trace::reader_bytes(trace::stream_path(dir, t, m.encoding));
  f.add("trace streams", streams + m.threads * heap_bytes(sizeof(Thread)), "the trace's threads (trace.path)");
  // The trace records only shared data. A parallel program partitions it: each thread is
  // counted with its share, as its own.
  AddressUse u;
  u.known = true;
  uint64_t data = 0;
  for (const auto& a : m.allocations) data += a.size;
  u.busy_procs = c.get_string("trace.placement") == "single" ? 1 : m.threads;
  u.private_bytes = data / std::max<uint32_t>(1, m.threads);
  return u;
}

TraceReplay::TraceReplay(const Config& c, net::Network& net, Stats& stats, uint64_t seed) : MbpWorkload(c, net, stats, seed) {
  path_ = trace_dir(c);
  meta_ = trace::read_meta(path_);
  validated_ = c.get_bool("trace.validate");
  if (validated_) total_records_ = trace::validate(path_).records;
  const uint32_t slots = nodes_ * procs_;
  const std::string placement = c.get_string("trace.placement");
  if (meta_.threads > slots && !c.get_bool("trace.multiplex"))
    c.fail("trace.path", path_ + " has " + std::to_string(meta_.threads) + " threads, the machine " + std::to_string(slots) +
                             " processors (" + std::to_string(nodes_) + " nodes x " + std::to_string(procs_) +
                             "); set trace.multiplex to time-share processors");
  if (placement == "single" && meta_.threads > 1 && !c.get_bool("trace.multiplex"))
    c.fail("trace.placement", "single puts " + std::to_string(meta_.threads) + " threads on one processor: set trace.multiplex");
  switch_cycles_ = static_cast<uint64_t>(c.get_int("trace.switch_cycles"));
  recorded_order_ = c.get_string("trace.sync") == "recorded";
  baseline_s_ = c.get_double("trace.baseline_s");
  on_proc_.assign(slots, {});
  current_.assign(slots, -1);
  th_.resize(meta_.threads);
  const std::vector<uint32_t> where = place(c, placement, meta_.threads);
  for (uint32_t t = 0; t < meta_.threads; ++t) {
    Thread& T = th_[t];
    T.in = trace::open_stream(path_, meta_, t);
    T.node = where[t] / procs_;
    T.proc = where[t] % procs_;
    on_proc_[where[t]].push_back(t);
  }
  uint32_t used = 0;
  for (uint32_t n = 0; n < nodes_; ++n)
    for (uint32_t p = 0; p < procs_; ++p)
      if (!on_proc_[n * procs_ + p].empty()) {
        ++used;
        break;
      }
  idle_nodes_ = nodes_ - used;
  // A trace with fewer threads than the machine has nodes leaves nodes running nothing: their
  // memories still home pages and their routers still forward, but the figures are those of a
  // smaller machine's computation. Said after the run (warnings) and in the summary (idle_nodes).
  if (idle_nodes_ && placement != "single")
    warning_ = path_ + " has " + std::to_string(meta_.threads) + " threads for " + std::to_string(nodes_) + " nodes (trace.placement " +
               placement + "): " + std::to_string(idle_nodes_) + " nodes run no thread";
  th_[0].st = State::Running;
  block_ = sys_->node_config().block_bytes;
  cycle_ps_ = sys_->node_config().cpu_ps();
  cpi_ = sys_->node_config().cpi;
}

std::vector<uint32_t> TraceReplay::place(const Config& c, const std::string& placement, uint32_t threads) const {
  const uint32_t slots = nodes_ * procs_;
  std::vector<uint32_t> w(threads);
  if (placement == "map") {
    const std::vector<int64_t> m = c.get_int_list("trace.map");
    if (m.size() != threads)
      c.fail("trace.map", "has " + std::to_string(m.size()) + " entries; " + path_ + " has " + std::to_string(threads) + " threads (one entry each)");
    std::vector<bool> taken(slots, false);
    for (uint32_t t = 0; t < threads; ++t) {
      const std::string at = "trace.map[" + std::to_string(t) + "]";
      if (m[t] < 0 || m[t] >= static_cast<int64_t>(slots))
        c.fail_at("trace.map", at, std::to_string(m[t]) + " is not a processor: there are " + std::to_string(slots) + " (" +
                                       std::to_string(nodes_) + " nodes x " + std::to_string(procs_) + "), numbered node x node.procs + processor");
      w[t] = static_cast<uint32_t>(m[t]);
      if (taken[w[t]] && !c.get_bool("trace.multiplex"))
        c.fail_at("trace.map", at, "processor " + std::to_string(w[t]) + " already runs a thread; set trace.multiplex to time-share it");
      taken[w[t]] = true;
    }
    return w;
  }
  for (uint32_t t = 0; t < threads; ++t) {
    const uint32_t s = t % slots;  // more threads than processors: they share, round robin
    if (placement == "single") {
      w[t] = 0;
    } else if (placement == "pack") {
      w[t] = s;
    } else if (threads <= nodes_) {  // spread, a thread per node at most: evenly over the nodes
      w[t] = static_cast<uint32_t>(static_cast<uint64_t>(t) * nodes_ / threads) * procs_;
    } else {  // spread: round robin over the nodes, then their next processors
      w[t] = (s % nodes_) * procs_ + s / nodes_;
    }
  }
  return w;
}

void TraceReplay::replay_error(uint32_t t, const std::string& what) const {
  const Thread& T = th_[t];
  const std::string where = "trace replay: " + T.in->file() + ": thread " + std::to_string(t) + ", record " +
                            std::to_string(T.in->index() - 1) + " (" + trace::name(T.rec.kind) + "): " + what;
  // A validated trace is consistent, so this is the simulator's fault; an unvalidated one may
  // simply be wrong: bad input (next() and complete() turn it into the run's input error).
  if (validated_) internal_error(where);
  throw UserError(where + " (the trace was not validated: trace.validate is false)");
}

void TraceReplay::read_record(uint32_t t) {
  Thread& T = th_[t];
  if (!T.in->next(T.rec)) replay_error(t, "the stream ended without an 'end' record");
  T.have_rec = true;
  T.phase = 0;
  T.off = 0;
  ++records_;
}

void TraceReplay::sleep(uint32_t t, std::vector<uint32_t>& list) {
  th_[t].st = State::Sleeping;
  list.push_back(t);
}

void TraceReplay::wake(uint32_t t) {
  Thread& T = th_[t];
  if (T.st != State::Sleeping && T.st != State::NotCreated) return;
  const uint64_t now = sys_->now_ps();
  if (now > T.last_t) {  // the time asleep is synchronisation wait
    T.sync += now - T.last_t;
    T.last_t = now;
  }
  T.st = State::Running;
  sys_->wake(T.node, T.proc);
}

void TraceReplay::wake_deps(uint32_t t) {
  auto& w = th_[t].dep_waiters;
  const uint64_t passed = th_[t].passed;
  std::vector<uint32_t> met;
  w.erase(std::remove_if(w.begin(), w.end(), [&](const std::pair<uint64_t, uint32_t>& d) {
            if (d.first >= passed) return false;
            met.push_back(d.second);
            return true;
          }),
          w.end());
  for (uint32_t u : met) wake(u);
}

void TraceReplay::wake_all(std::vector<uint32_t>& list) {
  std::vector<uint32_t> w;
  w.swap(list);
  for (uint32_t t : w) wake(t);
}

bool TraceReplay::next(uint32_t node, uint32_t proc, MemOp& op) {
  if (!input_error_.empty()) return false;
  try {
    return next_op(node, proc, op);
  } catch (const UserError& e) {  // a bad stream: stop cleanly, the runner exits 1
    input_error_ = e.what();
    return false;
  }
}

bool TraceReplay::next_op(uint32_t node, uint32_t proc, MemOp& op) {
  const uint32_t slot = node * procs_ + proc;
  const auto& mine = on_proc_[slot];
  int32_t& cur = current_[slot];
  if (cur >= 0 && th_[cur].st == State::Running && fill(static_cast<uint32_t>(cur), op)) return true;
  // The running thread sleeps or ended: switch to the next runnable one of this processor.
  size_t at = 0;
  for (size_t i = 0; i < mine.size(); ++i)
    if (static_cast<int32_t>(mine[i]) == cur) at = i + 1;
  for (size_t k = 0; k < mine.size(); ++k) {
    const uint32_t t = mine[(at + k) % mine.size()];
    if (th_[t].st != State::Running || static_cast<int32_t>(t) == cur) continue;
    Thread& T = th_[t];
    const uint64_t now = std::max(sys_->now_ps(), T.last_t);
    T.sync += now - T.last_t;  // waiting for the processor
    T.last_t = now;
    cur = static_cast<int32_t>(t);
    ++switches_;
    if (fill(t, op)) {
      op.gap += static_cast<uint64_t>(static_cast<double>(switch_cycles_) / cpi_ + 0.5);  // the context switch
      return true;
    }
  }
  return false;
}

namespace {
void set_atomic(MemOp& op, mbcf::AtomicOp kind, uint64_t addr, uint8_t width, uint64_t operand, uint64_t compare = 0) {
  op.kind = OpKind::Atomic;
  op.addr = addr;
  op.size = width;
  op.atomic = mbcf::AtomicArgs{};
  op.atomic.op = kind;
  op.atomic.width = width;
  op.atomic.operand[0] = operand;
  op.atomic.compare = compare;
}
}  // namespace

bool TraceReplay::fill(uint32_t t, MemOp& op) {
  Thread& T = th_[t];
  for (;;) {
    if (!T.have_rec) read_record(t);
    const trace::Record& r = T.rec;
    op.tag = 0;
    op.gap = 0;
    T.role = Role::Sync;
    auto take_gap = [&] {  // once per record: a retried lock or barrier try computes nothing again
      op.gap = r.gap + T.carry_gap;
      T.carry_gap = 0;
      T.rec.gap = 0;
    };
    auto no_op = [&] {  // a record that issues nothing: its gap moves to the next operation
      T.carry_gap += r.gap;
      advance(t);
    };
    switch (r.kind) {
      case Kind::Load:
      case Kind::Store: {
        T.role = Role::Memory;
        if (T.off == 0) {
          take_gap();
          ++refs_;
          ++T.refs;
        }
        const uint64_t a = r.addr + T.off;
        const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(r.size - T.off, block_ - a % block_));
        op.kind = r.kind == Kind::Load ? OpKind::Load : OpKind::Store;
        op.addr = a;
        op.size = n;
        if (op.kind == OpKind::Store) std::memset(op.data, static_cast<int>(t + 1), n);  // the writer's mark
        T.off += n;
        if (T.off == r.size) advance(t);
        return true;
      }
      case Kind::Rmw: {
        T.role = Role::Memory;
        take_gap();
        ++refs_;
        ++T.refs;
        const uint8_t w = r.size <= 4 ? 4 : 8;
        const uint64_t a = r.addr & ~static_cast<uint64_t>(w - 1);
        if (r.op == trace::RmwOp::Swap) set_atomic(op, mbcf::AtomicOp::Swap, a, w, t + 1);
        else if (r.op == trace::RmwOp::Cas) set_atomic(op, mbcf::AtomicOp::CompSwap, a, w, t + 1, 0);
        else set_atomic(op, mbcf::AtomicOp::FetchAdd, a, w, 1);
        advance(t);
        return true;
      }
      case Kind::Begin:
      case Kind::Alloc:
        no_op();
        continue;
      case Kind::RoiBegin:
        if (!roi_begin_ps_ || T.last_t < roi_begin_ps_) roi_begin_ps_ = T.last_t;
        no_op();
        continue;
      case Kind::RoiEnd:
        roi_end_ps_ = std::max(roi_end_ps_, T.last_t);
        no_op();
        continue;
      case Kind::Fence:
        take_gap();
        op.kind = OpKind::Fence;
        advance(t);
        return true;
      case Kind::Create: {
        Thread& C = th_[r.thread];
        if (C.st != State::NotCreated) replay_error(t, "thread " + std::to_string(r.thread) + " was already created");
        C.last_t = std::max(T.last_t, sys_->now_ps());  // it did not exist before: not waiting
        wake(r.thread);
        no_op();
        continue;
      }
      case Kind::Dep: {  // a hand-off: the other thread's write this one reads comes first
        if (r.thread >= th_.size() || r.thread == t) replay_error(t, "a dep on thread " + std::to_string(r.thread));
        if (th_[r.thread].passed > r.seq) {
          no_op();
          continue;
        }
        if (th_[r.thread].st == State::Ended) replay_error(t, "a dep on a record thread " + std::to_string(r.thread) + " never reached");
        th_[r.thread].dep_waiters.emplace_back(r.seq, t);
        T.st = State::Sleeping;
        ++dep_waits_;
        return false;
      }
      case Kind::Join:
        if (th_[r.thread].st == State::Ended) {
          no_op();
          continue;
        }
        sleep(t, joiners_[r.thread]);
        return false;
      case Kind::End:  // drain the write buffer, then the thread has ended
        take_gap();
        op.kind = OpKind::Fence;
        T.phase = 1;
        return true;
      case Kind::Acquire: {
        Lock& L = locks_[trace::sync_word(r.addr)];
        if (recorded_order_ && L.turn < r.seq) {  // spinning on a cached copy costs nothing until the release
          sleep(t, L.waiters);
          return false;
        }
        if (++T.attempts > 1000000) replay_error(t, "a million compare&swaps without the lock");
        take_gap();
        if (recorded_order_) {
          set_atomic(op, mbcf::AtomicOp::CompSwap, trace::sync_word(r.addr), 8, 2 * r.seq + 1, 2 * r.seq);
        } else {
          set_atomic(op, mbcf::AtomicOp::CompSwap, trace::sync_word(r.addr), 8, 1, 0);
          T.releases_seen = L.releases;
        }
        T.phase = 1;
        return true;
      }
      case Kind::Release:
        if (T.phase == 0) {  // release consistency: earlier writes performed first
          take_gap();
          op.kind = OpKind::Fence;
          T.phase = 1;
          return true;
        }
        {
          auto h = T.held.find(trace::sync_word(r.addr));
          if (h == T.held.end()) replay_error(t, "release of a lock the thread does not hold");
          set_atomic(op, mbcf::AtomicOp::Swap, trace::sync_word(r.addr), 8, recorded_order_ ? 2 * (h->second + 1) : 0);
        }
        T.phase = 3;
        return true;
      case Kind::Barrier: {
        Barrier& B = barriers_[trace::sync_word(r.addr)];
        if (T.phase == 0) {
          if (B.episode < r.seq) {  // an earlier episode is still gathering
            sleep(t, B.waiters);
            return false;
          }
          take_gap();
          set_atomic(op, mbcf::AtomicOp::FetchAdd, trace::sync_word(r.addr), 8, 1);
          // This episode's base, kept with the arrival: its answer may come back after the
          // episode has opened and the barrier's base has moved on (a far node's answer still
          // in flight when the home's own last arriver has swapped the episode word).
          T.barrier_base = B.base;
          T.phase = 1;
          return true;
        }
        if (T.phase == 2) {  // the last to arrive opens the episode
          set_atomic(op, mbcf::AtomicOp::Swap, trace::sync_word(r.addr) + 8, 8, r.seq + 1);
          T.phase = 4;
          return true;
        }
        // phase 3: read the episode word
        op.kind = OpKind::Load;
        op.addr = trace::sync_word(r.addr) + 8;
        op.size = 8;
        T.phase = 5;
        return true;
      }
      case Kind::Post:
      case Kind::Signal:
      case Kind::Broadcast:
        take_gap();
        set_atomic(op, mbcf::AtomicOp::FetchAdd, trace::sync_word(r.addr), 8, 1);
        T.phase = 1;
        return true;
      case Kind::Wait: {
        Counted& S = sems_[trace::sync_word(r.addr)];
        if (S.happened <= r.seq) {
          sleep(t, S.waiters);
          return false;
        }
        take_gap();
        set_atomic(op, mbcf::AtomicOp::FetchAdd, trace::sync_word(r.addr), 8, ~0ull);  // -1
        T.phase = 1;
        return true;
      }
      case Kind::CondWait: {
        Counted& C = conds_[trace::sync_word(r.addr)];
        if (C.happened <= r.seq) {
          sleep(t, C.waiters);
          return false;
        }
        take_gap();
        op.kind = OpKind::Load;
        op.addr = trace::sync_word(r.addr);
        op.size = 8;
        T.phase = 1;
        return true;
      }
    }
    replay_error(t, "unknown record kind");
  }
}

void TraceReplay::complete(uint32_t node, uint32_t proc, const MemOp& op, uint64_t now) {
  if (!input_error_.empty()) return;
  try {
    complete_op(node, proc, op, now);
  } catch (const UserError& e) {  // an unvalidated trace broke a rule: the runner exits 1
    input_error_ = e.what();
  }
}

void TraceReplay::complete_op(uint32_t node, uint32_t proc, const MemOp& op, uint64_t now) {
  last_complete_ps_ = std::max(last_complete_ps_, now);
  const uint32_t t = static_cast<uint32_t>(current_[node * procs_ + proc]);
  Thread& T = th_[t];
  // Accounting: the op's compute gap is busy time, the rest memory stall or synchronisation.
  const uint64_t dt = now > T.last_t ? now - T.last_t : 0;
  const uint64_t comp = std::min<uint64_t>(dt, static_cast<uint64_t>(static_cast<double>(op.gap) * cpi_ * cycle_ps_ + 0.5));
  T.busy += comp;
  if (T.role == Role::Memory) T.stall[op.level <= 4 ? op.level : 0] += dt - comp;
  else T.sync += dt - comp;
  T.last_t = std::max(T.last_t, now);
  if (T.role == Role::Memory) return;

  const trace::Record& r = T.rec;
  const uint64_t old = op.kind == OpKind::Atomic || op.kind == OpKind::Load ? mbcf::load_le(op.data, 8) : 0;
  switch (r.kind) {
    case Kind::End:
      T.st = State::Ended;
      T.end_ps = now;
      T.have_rec = false;
      ++ended_;
      wake_all(joiners_[t]);
      return;
    case Kind::Acquire: {
      Lock& L = locks_[trace::sync_word(r.addr)];
      if (!recorded_order_) {
        if (old == 0) {  // free when this compare&swap reached the home: held
          T.held[trace::sync_word(r.addr)] = r.seq;
          T.attempts = 0;
          advance(t);
          return;
        }
        if (old != 1) replay_error(t, "the lock word at " + trace::hex(trace::sync_word(r.addr)) + " holds " + std::to_string(old) + ", neither free (0) nor held (1)");
        ++retries_;
        T.phase = 0;
        // Held: wait for a release, unless one has completed since this try was issued.
        if (L.releases == T.releases_seen) sleep(t, L.waiters);
        return;
      }
      if (old == 2 * r.seq) {  // granted: the word said free at this turn
        T.held[trace::sync_word(r.addr)] = r.seq;
        T.attempts = 0;
        advance(t);
        return;
      }
      if (old > 2 * r.seq) replay_error(t, "the lock word at " + trace::hex(trace::sync_word(r.addr)) + " is past this acquisition (" + std::to_string(old) + ")");
      ++retries_;
      T.phase = 0;
      // Performed before the predecessor's release: if that release has completed since,
      // try again now, else wait for it.
      if (L.turn < r.seq) sleep(t, L.waiters);
      return;
    }
    case Kind::Release: {
      if (T.phase == 1) {  // the fence is done: now the swap
        T.phase = 2;
        return;
      }
      Lock& L = locks_[trace::sync_word(r.addr)];
      auto h = T.held.find(trace::sync_word(r.addr));
      const uint64_t k = h->second;
      // Only the holder turns the word back: mutual exclusion, checked on the machine's own
      // value (simulated: 1; recorded: 2k+1 for acquisition k).
      const uint64_t held = recorded_order_ ? 2 * k + 1 : 1;
      if (old != held)
        replay_error(t, "mutual exclusion broken: the lock word at " + trace::hex(trace::sync_word(r.addr)) + " held " + std::to_string(old) +
                            " at the release" + (recorded_order_ ? " of acquisition " + std::to_string(k) : std::string()) +
                            ", expected " + std::to_string(held));
      T.held.erase(h);
      L.turn = std::max(L.turn, k + 1);
      ++L.releases;
      advance(t);
      wake_all(L.waiters);
      return;
    }
    case Kind::Barrier: {
      Barrier& B = barriers_[trace::sync_word(r.addr)];
      if (T.phase == 1) {
        const uint64_t arrived = old + 1 - T.barrier_base;
        if (arrived > r.count) replay_error(t, "barrier counter says " + std::to_string(arrived) + " arrivals of " + std::to_string(r.count));
        T.phase = arrived == r.count ? 2 : 3;
        return;
      }
      if (T.phase == 4) {
        B.episode = r.seq + 1;
        B.base += r.count;
        advance(t);
        wake_all(B.waiters);
        return;
      }
      // phase 5: the episode word
      if (old > r.seq) {
        advance(t);
        return;
      }
      T.phase = 3;
      if (B.episode > r.seq) {  // opened, but this copy has not caught up yet: read again
        ++stale_reads_;
        return;
      }
      sleep(t, B.waiters);
      return;
    }
    case Kind::Post:
    case Kind::Signal:
    case Kind::Broadcast: {
      // Posts and wake-ups of different threads may complete out of their captured order; a
      // wait needs only that many to have happened.
      Counted& C = r.kind == Kind::Post ? sems_[trace::sync_word(r.addr)] : conds_[trace::sync_word(r.addr)];
      ++C.happened;
      advance(t);
      wake_all(C.waiters);
      return;
    }
    case Kind::Wait:
    case Kind::CondWait:
      advance(t);
      return;
    default:
      return;  // fences
  }
}

std::string TraceReplay::stalled() const {
  if (done() || !sys_->quiet() || net_.in_flight() > 0) return "";
  for (uint32_t t = 0; t < th_.size(); ++t) {
    const Thread& T = th_[t];
    if (T.st == State::Sleeping)
      return "trace replay went quiet: thread " + std::to_string(t) + " sleeps at record " + std::to_string(T.in->index() - 1) + " (" +
             trace::name(T.rec.kind) + ") of " + T.in->file();
  }
  return "trace replay went quiet before every thread ended";
}

std::string TraceReplay::progress(double wall_s) const {
  char buf[96];
  std::snprintf(buf, sizeof buf, " | %llu trace references, %.0f/s", static_cast<unsigned long long>(refs_), refs_ / wall_s);
  return buf;
}

ordered_json TraceReplay::summary() const {
  ordered_json s = base_summary();
  s["trace"] = path_;
  s["program"] = meta_.program;
  s["threads"] = meta_.threads;
  s["idle_nodes"] = idle_nodes_;  // nodes whose processors run no thread
  s["records"] = records_;
  s["references"] = refs_;
  s["exec_time_s"] = static_cast<double>(last_complete_ps_) / 1e12;
  if (roi_end_ps_ > roi_begin_ps_) s["roi_time_s"] = static_cast<double>(roi_end_ps_ - roi_begin_ps_) / 1e12;
  if (baseline_s_ > 0 && last_complete_ps_ > 0) s["speedup"] = baseline_s_ / (static_cast<double>(last_complete_ps_) / 1e12);
  s["context_switches"] = switches_;
  s["lock_retries"] = retries_;
  s["stale_sync_reads"] = stale_reads_;
  s["hand_off_waits"] = dep_waits_;  // deps that found their record not yet passed
  ordered_json per = ordered_json::array();
  double busy = 0, mem = 0, sync = 0;
  for (uint32_t t = 0; t < th_.size(); ++t) {
    const Thread& T = th_[t];
    ordered_json p;
    p["thread"] = t;
    p["node"] = T.node;
    p["proc"] = T.proc;
    p["references"] = T.refs;
    p["busy_s"] = T.busy / 1e12;
    p["stall_l1_s"] = T.stall[1] / 1e12;
    p["stall_l2_s"] = T.stall[2] / 1e12;
    p["stall_local_s"] = T.stall[3] / 1e12;
    p["stall_remote_s"] = T.stall[4] / 1e12;
    p["stall_other_s"] = T.stall[0] / 1e12;  // buffered stores, atomics of the program
    p["sync_s"] = T.sync / 1e12;
    p["end_s"] = T.end_ps / 1e12;
    busy += T.busy;
    for (uint64_t x : T.stall) mem += x;
    sync += T.sync;
    per.push_back(p);
  }
  const double all = busy + mem + sync;
  auto fraction = [&](double x) { return all > 0 ? ordered_json(x / all) : ordered_json(nullptr); };
  s["busy_fraction"] = fraction(busy);
  s["memory_stall_fraction"] = fraction(mem);
  s["sync_fraction"] = fraction(sync);
  s["per_thread"] = per;
  // Coherence traffic: messages by type, multicast fan-out, combined acknowledgements; and
  // the network's bytes per tree level (level 0: the root's links), down and up.
  const auto st = stats_.dump();
  if (st.contains("system") && st["system"].contains("mbp")) {
    const auto& mbp = st["system"]["mbp"];
    if (mbp.contains("messages")) s["coherence_messages"] = mbp["messages"];
    if (mbp.contains("rounds")) {
      const auto& fan = mbp["rounds"]["fanout"];
      s["multicast_fanout_mean"] = fan.contains("mean") && fan.value("count", uint64_t{1}) > 0 ? fan["mean"] : ordered_json(nullptr);
      s["combined_acks_at_home"] = mbp["rounds"].value("acks_at_home", uint64_t{0});
      s["acks_from_holders"] = mbp["rounds"].value("acks_from_holders", uint64_t{0});
    }
  }
  if (st.contains("system") && st["system"].contains("net")) {
    const double flit_bytes = net_.config().flit_bits / 8.0;
    const int radix = static_cast<int>(net_.config().radix);
    std::map<int, std::pair<double, double>> level;  // height -> (down, up) bytes
    for (auto it = st["system"]["net"].begin(); it != st["system"]["net"].end(); ++it) {
      int h = 0, pos = 0;
      if (std::sscanf(it.key().c_str(), "router_%d_%d", &h, &pos) != 2) continue;
      for (auto p = it.value().begin(); p != it.value().end(); ++p) {
        int port = 0;
        if (std::sscanf(p.key().c_str(), "port%d", &port) != 1 || !p.value().contains("flits")) continue;
        const double b = p.value()["flits"].get<double>() * flit_bytes;
        (port < radix ? level[h].first : level[h].second) += b;
      }
    }
    ordered_json lv = ordered_json::array();
    for (const auto& [h, b] : level) lv.push_back({{"level", h}, {"down_bytes", b.first}, {"up_bytes", b.second}});
    s["network_bytes_per_level"] = lv;
  }
  return s;
}

}  // namespace mbpsim
