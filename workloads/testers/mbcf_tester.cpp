// The MBCF random tester: see mbcf_tester.h for the checks and their oracles.
#include "workloads/testers/mbcf_tester.h"

#include <algorithm>
#include <cstdio>

#include "models/core/module_tree.h"
#include "models/core/error.h"
#include "models/mbcf/atomic.h"
#include "models/mbcf/engine.h"

namespace mbpsim {

using namespace mbcf;
using json = nlohmann::json;
using nlohmann::ordered_json;

namespace {
const std::vector<std::string> kChecks = {"fetch_add", "lock", "signal", "fifoe", "emb", "multicast"};
const char* const kCondNames[] = {"every_time_blk", "first_only_blk", "every_time_nonblk", "first_only_nonblk"};

// Node 0's words (logical addresses in every node's task 1; see MbcfWorkload's address map).
constexpr uint32_t kScalar = MbcfWorkload::kFlag;          // fetch_add: the scalar counter
constexpr uint32_t kPair = MbcfWorkload::kFlag + 8;        // fetch_add: the vector pair
constexpr uint32_t kLock = MbcfWorkload::kFlag + 0x10;     // lock: the lock word
constexpr uint32_t kCounter = MbcfWorkload::kFlag + 0x14;  // lock: the protected counter
// A client's words.
constexpr uint32_t kOld = MbcfWorkload::kFlag + 0x40;  // data returned by READ and the atomics
constexpr uint32_t kSlot = MbcfWorkload::kStatus;      // its status word
// Signal structures at node 0, one per condition, each with its FIFO and 4 KiB buffer.
constexpr uint32_t kSigStride = 32, kFifoStride = 32, kFifoBufBytes = 0x1000, kDspPc = 0x6000;
constexpr uint32_t kCandidates = 8;  // multicast: candidate pages per node, from kSrc
constexpr uint32_t kBackoffMinUs = 20, kBackoffMaxUs = 400;
// fifoe: the FIFO structure and its buffer at node 0 (the last signal structure's, free by
// then: 32 bytes, under three entries of 8 bytes, per client, so that it overflows often but
// not all the time), the clients' status slots, and how many entries a client keeps
// outstanding.
constexpr uint32_t kFifoeQ = MbcfWorkload::kFifo + 0x80, kFifoeBuf = MbcfWorkload::kFifoBuf + 0x3000, kFifoeBufPerClient = 32;
constexpr uint32_t kFifoeSlots = MbcfWorkload::kStatus + 0x100, kFifoeWindow = 6;
}  // namespace

void declare_mbcf_tester_params(ParamSchema& s) {
  using T = ParamType;
  s.add({"mbcf_tester.checks", T::Json, json(kChecks), "",
         "mbcf_tester: the checks to run, in order (fetch_add, lock, signal, fifoe, emb, multicast)", -1e300, 1e300});
  s.add({"mbcf_tester.ops", T::Int, 20, "", "mbcf_tester: operations per client in each check (multicast: rounds)", 1, 100000});
  s.add({"mbcf_tester.check_us", T::Double, 5e6, "us", "mbcf_tester: simulated time a check may take before it fails as stuck", 1, 1e12});
}

MbcfTester::MbcfTester(const Config& c, Stats& stats, uint64_t seed) : MbcfWorkload(c, stats, seed), stats_(stats), seed_(seed) {
  if (cfg_.nodes < 2) c.fail("mbcf.nodes", "workload.kind mbcf_tester needs 2 nodes or more (a target and clients)");
  ops_ = static_cast<uint32_t>(c.get_int("mbcf_tester.ops"));
  check_us_ = c.get_double("mbcf_tester.check_us");
  clients_ = cfg_.nodes - 1;
  pb_ = cfg_.page_bytes;
  const json& list = c.get_json("mbcf_tester.checks");
  if (!list.is_array() || list.empty()) c.fail("mbcf_tester.checks", "must be a non-empty list of check names");
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string() || std::find(kChecks.begin(), kChecks.end(), list[i].get<std::string>()) == kChecks.end())
      c.fail_at("mbcf_tester.checks", "mbcf_tester.checks[" + std::to_string(i) + "]",
                "is not a check (fetch_add, lock, signal, fifoe, emb, multicast)");
    checks_.push_back(list[i].get<std::string>());
  }
  // emb: each client writes 16-byte records to its own slots of node 0's data area; a burst
  // is at most 4 writes.
  emb_slots_ = 0x20000 / clients_ / 16;
  if (std::count(checks_.begin(), checks_.end(), "emb") && 4ull * ops_ > emb_slots_)
    c.fail("mbcf_tester.ops", "emb: " + std::to_string(ops_) + " bursts of up to 4 writes need " + std::to_string(4 * ops_) +
                                  " slots per client, and node 0's 128 KiB data area holds " + std::to_string(emb_slots_));
  if (std::count(checks_.begin(), checks_.end(), "multicast") && kCandidates * pb_ > 0x20000)
    c.fail("mbcf.page_bytes", "multicast: needs 8 candidate pages in the 128 KiB data area");
  for (uint32_t n = 0; n < cfg_.nodes; ++n) rng_.emplace_back(seed, "mbcf_tester.node" + std::to_string(n));
  // The programs the signal structures invoke, one per condition.
  for (uint32_t k = 0; k < 4; ++k)
    sys_->set_program(0, kPtask, kDspPc + 0x100 * k,
                      [this, k](const Invocation& iv, std::function<void()> done) { signal_program(k, iv, std::move(done)); });
}

// ------------------------------------------------------------------ helpers

void MbcfTester::after(double us, std::function<void()> fn) { cal_->after(static_cast<uint64_t>(us * 1e6), std::move(fn)); }
Task& MbcfTester::task(uint32_t node) { return *sys_->space(node).find(kPtask); }
uint32_t MbcfTester::word(uint32_t node, uint32_t laddr) const {
  const TaskSpace& ts = sys_->space(node);
  return ts.load32(*ts.find(kPtask), laddr);
}
void MbcfTester::set_word(uint32_t node, uint32_t laddr, uint32_t v) { sys_->space(node).store32(task(node), laddr, v); }
uint64_t MbcfTester::counter(const std::string& path) const {
  const auto v = stats_.counter_value(path);
  if (!v) internal_error("mbcf_tester: no counter " + path);
  return *v;
}

void MbcfTester::fail(const std::string& what) {
  Result& r = results_.back();
  if (!r.pass && r.detail.size() > 2000) return;  // the first failures say enough
  if (!r.pass) r.detail += "; ";
  r.pass = false;
  r.detail += what;
  std::fprintf(stderr, "mbcf_tester: %s failed (seed %llu): %s\n", r.name.c_str(), static_cast<unsigned long long>(seed_), what.c_str());
}

void MbcfTester::send(uint32_t n, uint32_t to, std::vector<Command> cmds, std::function<void()> k) {
  if (!sys_->syscall(n, kPtask, Request{to, std::move(cmds)}, std::move(k))) fail("node " + std::to_string(n) + "'s request was refused by its sender");
}

void MbcfTester::call(uint32_t n, uint32_t to, Command c, std::function<void(Status)> k) {
  set_word(n, kSlot, 0);
  c.opt.reply = ReplyMode::Status;
  c.status_laddr = kSlot;
  const uint64_t serial = check_serial_;
  send(n, to, {std::move(c)}, [this, n, k = std::move(k), serial] {
    sys_->poll(n, [this, n] { return word(n, kSlot) != 0; }, [this, n, k, serial] {
      if (serial != check_serial_) return;  // the check was abandoned as stuck
      k(static_cast<Status>(word(n, kSlot)));
    });
  });
}

void MbcfTester::start() { after(1, [this] { next_check(); }); }

void MbcfTester::next_check() {
  if (cur_ == checks_.size()) return finish();
  ++check_serial_;
  results_.push_back(Result{checks_[cur_], true, "", ordered_json::object()});
  running_clients_ = clients_;
  retries_ = 0;
  left_.assign(cfg_.nodes, ops_);
  const uint64_t serial = check_serial_;
  after(check_us_, [this, serial] {
    if (serial != check_serial_) return;
    char us[32];
    std::snprintf(us, sizeof us, "%g", check_us_);
    const std::string dump = sys_->state_dump();
    fail(std::string("stuck: not finished after ") + us + " us of simulated time (" + std::to_string(running_clients_) + " client(s) still running; " +
         (sys_->quiet() ? "nothing in flight: an answer was never sent)" : "packets still in flight)") + (dump.empty() ? "" : "\n" + dump));
    ++check_serial_;
    finish();  // the run ends here: what is still in flight is abandoned
  });
  const std::string& n = checks_[cur_];
  if (n == "fetch_add") start_fetch_add();
  else if (n == "lock") start_lock();
  else if (n == "signal") start_signal();
  else if (n == "fifoe") start_fifoe();
  else if (n == "emb") start_emb();
  else start_multicast();
}

void MbcfTester::client_done() {
  if (--running_clients_ > 0) return;
  const std::string& n = checks_[cur_];
  wait_quiet_then([this, n] {
    if (n == "fetch_add") finish_fetch_add();
    else if (n == "lock") finish_lock();
    else if (n == "signal" && !finish_signal()) return;  // called again once settled
    else if (n == "emb") finish_emb();
    else if (n == "fifoe") finish_fifoe();
    end_check();
  });
}

void MbcfTester::wait_quiet_then(std::function<void()> k) {
  const uint64_t serial = check_serial_;
  if (sys_->quiet()) return k();
  after(100, [this, k = std::move(k), serial]() mutable {
    if (serial == check_serial_) wait_quiet_then(std::move(k));
  });
}

void MbcfTester::end_check() {
  results_.back().figures["retries"] = retries_;
  ++cur_;
  next_check();
}

// ------------------------------------------------------------------ fetch_add

void MbcfTester::start_fetch_add() {
  fa_scalar_.clear();
  fa_vector_.clear();
  for (uint32_t w = 0; w < 4; ++w) set_word(0, kScalar + 4 * w, 0);
  for (uint32_t n = 1; n <= clients_; ++n) fetch_add_step(n);
}

void MbcfTester::fetch_add_step(uint32_t n) {
  if (left_[n] == 0) return client_done();
  --left_[n];
  const bool vec = rng_[n].below(2) == 1;
  Command f;
  f.cmd = Cmd::FetchAdd;
  f.laddr = vec ? kPair : kScalar;
  f.length = vec ? 8 : 4;
  f.data = vec ? std::vector<uint8_t>{1, 0, 0, 0, 3, 0, 0, 0} : std::vector<uint8_t>{1, 0, 0, 0};
  f.data_laddr = kOld;
  call(n, 0, f, [this, n, vec](Status st) {
    if (st != Status::Succeeded) {
      fail("node " + std::to_string(n) + ": FETCH_ADD answered " + to_string(st));
    } else if (vec) {
      const uint32_t a = word(n, kOld), b = word(n, kOld + 4);
      if (b != 3 * a) fail("node " + std::to_string(n) + ": the vector FETCH_ADD returned (" + std::to_string(a) + ", " + std::to_string(b) + "), not (x, 3x): not atomic");
      fa_vector_.push_back(a);
    } else {
      fa_scalar_.push_back(word(n, kOld));
    }
    fetch_add_step(n);
  });
}

void MbcfTester::finish_fetch_add() {
  auto perm = [this](std::vector<uint32_t> v, const char* what) {
    std::sort(v.begin(), v.end());
    for (uint32_t i = 0; i < v.size(); ++i)
      if (v[i] != i) {
        fail(std::string(what) + ": the old values are not a permutation of 0.." + std::to_string(v.size() - 1) + " (sorted, position " + std::to_string(i) + " holds " +
             std::to_string(v[i]) + ")");
        return;
      }
  };
  perm(fa_scalar_, "scalar");
  perm(fa_vector_, "vector");
  const uint32_t s = static_cast<uint32_t>(fa_scalar_.size()), v = static_cast<uint32_t>(fa_vector_.size());
  if (word(0, kScalar) != s) fail("the scalar counter ends at " + std::to_string(word(0, kScalar)) + ", not " + std::to_string(s));
  if (word(0, kPair) != v || word(0, kPair + 4) != 3 * v)
    fail("the vector pair ends at (" + std::to_string(word(0, kPair)) + ", " + std::to_string(word(0, kPair + 4)) + "), not (" + std::to_string(v) + ", " + std::to_string(3 * v) + ")");
  results_.back().figures["scalar"] = s;
  results_.back().figures["vector"] = v;
}

// ------------------------------------------------------------------ lock

void MbcfTester::start_lock() {
  holders_ = sections_ = failed_acquires_ = 0;
  set_word(0, kLock, 0);
  set_word(0, kCounter, 0);
  for (uint32_t n = 1; n <= clients_; ++n) lock_step(n);
}

namespace {
Command word_cmd(Cmd k, uint32_t laddr, uint32_t v) {
  Command x = word_command(k, laddr, v);
  x.data_laddr = kOld;
  return x;
}
}  // namespace

void MbcfTester::lock_step(uint32_t n) {
  if (left_[n] == 0) return client_done();
  // Acquire with COMP_SWAP (0 -> n) or with SWAP (n in; the old value 0 means taken).
  const bool cas = rng_[n].below(2) == 1;
  Command acq = word_cmd(cas ? Cmd::CompSwap : Cmd::Swap, kLock, n);
  if (cas) {
    acq.flag_laddr = kLock;
    acq.flag_value = 0;
  }
  call(n, 0, acq, [this, n, cas](Status st) {
    const bool taken = cas ? st == Status::Succeeded : (st == Status::Succeeded && word(n, kOld) == 0);
    if (st != Status::Succeeded && !(cas && st == Status::CompareFailed)) fail("node " + std::to_string(n) + ": lock acquisition answered " + to_string(st));
    if (!taken) {
      ++failed_acquires_;
      ++retries_;
      after(kBackoffMinUs + rng_[n].below(kBackoffMaxUs - kBackoffMinUs), [this, n] { lock_step(n); });
      return;
    }
    if (++holders_ != 1) fail("node " + std::to_string(n) + " took the lock while " + std::to_string(holders_ - 1) + " other node(s) held it");
    Command rd = word_cmd(Cmd::Read, kCounter, 0);
    rd.data.clear();
    call(n, 0, rd, [this, n](Status) {
      const uint32_t v = word(n, kOld);
      call(n, 0, word_cmd(Cmd::Write, kCounter, v + 1), [this, n](Status) {
        --holders_;
        ++sections_;
        call(n, 0, word_cmd(Cmd::Swap, kLock, 0), [this, n](Status) {
          if (word(n, kOld) == 0) fail("node " + std::to_string(n) + " released a lock nobody held");
          --left_[n];
          lock_step(n);
        });
      });
    });
  });
}

void MbcfTester::finish_lock() {
  if (word(0, kCounter) != sections_)
    fail("the counter ends at " + std::to_string(word(0, kCounter)) + " after " + std::to_string(sections_) + " critical sections: an update was lost");
  if (word(0, kLock) != 0) fail("the lock is still held at the end");
  results_.back().figures["critical_sections"] = sections_;
  results_.back().figures["failed_acquisitions"] = failed_acquires_;
}

// ------------------------------------------------------------------ signal

void MbcfTester::start_signal() {
  TaskSpace& ts = sys_->space(0);
  Task& t = task(0);
  for (uint32_t k = 0; k < 4; ++k) {
    const uint32_t fifo = kFifo + kFifoStride * k;
    init_fifo(ts, t, fifo, kFifoBuf + kFifoBufBytes * k, kFifoBufBytes);
    init_signal(ts, t, kSignal + kSigStride * k, SigInvoke::DspInvoke, SigStore::Quew, static_cast<SigCond>(k), kDspPc + 0x100 * k, 0, 0, fifo);
  }
  sig_seq_.assign(cfg_.nodes * 4, 0);
  sig_taken_.assign(4, {});
  sig_active_.assign(4, 0);
  sig_invocations_.assign(4, 0);
  sig_succeeded_.assign(4, 0);
  sig_refused_.assign(4, 0);
  sig_full_.assign(4, 0);
  for (uint32_t n = 1; n <= clients_; ++n) signal_step(n);
}

void MbcfTester::signal_step(uint32_t n) {
  if (left_[n] == 0) return client_done();
  const uint32_t k = static_cast<uint32_t>(rng_[n].below(4));
  Command s;
  s.cmd = Cmd::Signal;
  s.laddr = kSignal + kSigStride * k;
  s.length = 8;
  s.data.resize(8);
  store_le(s.data.data(), 4, n);
  store_le(s.data.data() + 4, 4, sig_seq_[n * 4 + k]);
  call(n, 0, s, [this, n, k](Status st) {
    const bool blocking = k == 0 || k == 1;
    if (st == Status::Succeeded) {
      ++sig_seq_[n * 4 + k];
      ++sig_succeeded_[k];
      --left_[n];
      return signal_step(n);
    }
    if (st == Status::SignalCondition && blocking) {
      ++sig_refused_[k];
    } else if (st == Status::FifoFull) {
      ++sig_full_[k];
    } else {
      fail("node " + std::to_string(n) + ": SIGNAL to the " + kCondNames[k] + " structure answered " + to_string(st));
      --left_[n];
      return signal_step(n);
    }
    ++retries_;  // the same signal again after a back-off
    after(kBackoffMinUs + rng_[n].below(kBackoffMaxUs - kBackoffMinUs), [this, n] { signal_step(n); });
  });
}

void MbcfTester::signal_program(uint32_t k, const Invocation& iv, std::function<void()> done) {
  ++sig_invocations_[k];
  if (iv.signal_laddr != kSignal + kSigStride * k) fail(std::string(kCondNames[k]) + ": the program was invoked for the structure at " + std::to_string(iv.signal_laddr));
  // Only EVERY_TIME_NONBLK may run a second invocation before the first has finished: the
  // blocking conditions refuse, and FIRST_ONLY_NONBLK stores without invoking while the
  // running flag is set (the program clears it, with its last light-weight call, just before
  // it returns).
  if (++sig_active_[k] > 1 && k != 2)
    fail(std::string(kCondNames[k]) + ": two invocations run at once");
  // The program computes for a while, then takes what the signals stored.
  after(10 + rng_[0].below(300), [this, k, done = std::move(done)]() mutable { signal_take(k, std::move(done)); });
}

void MbcfTester::signal_take(uint32_t k, std::function<void()> done) {
  const bool first_only = k == 1 || k == 3;
  const uint32_t sig = kSignal + kSigStride * k, fifo = kFifo + kFifoStride * k;
  // Each entry is checked where the kernel takes it, in the FIFO's order: EVERY_TIME_NONBLK's
  // programs run on top of one another (one invoked while another's call copies its entry
  // out), so they may finish their entries in another order.
  sys_->lw_entry_call(
      0, kPtask,
      [this, k, first_only, sig, fifo](TaskSpace& ts, Task& t) {
        // FIRST_ONLY: the call takes one stored entry, or clears the running flag when none is left.
        auto e = first_only ? signal_reset(ts, t, sig) : fifo_pop(ts, t, fifo);
        if (e) consume(k, *e);
        else if (!first_only) fail(std::string(kCondNames[k]) + ": an invocation found no stored signal");
        return e;
      },
      [this, k, first_only, done = std::move(done)](std::optional<std::vector<uint8_t>> e) mutable {
        if (first_only && e) return signal_take(k, std::move(done));
        --sig_active_[k];
        done();
      });
}

void MbcfTester::consume(uint32_t k, const std::vector<uint8_t>& e) {
  if (e.size() != 20) {
    fail(std::string(kCondNames[k]) + ": a stored signal of " + std::to_string(e.size()) + " bytes, not 12 + 8");
    return;
  }
  const uint32_t pnode = static_cast<uint32_t>(load_le(e.data(), 4)), len = static_cast<uint32_t>(load_le(e.data() + 8, 4));
  const uint32_t from = static_cast<uint32_t>(load_le(e.data() + 12, 4)), seq = static_cast<uint32_t>(load_le(e.data() + 16, 4));
  if (pnode != from || len != 8) fail(std::string(kCondNames[k]) + ": a stored record names node " + std::to_string(pnode) + " and length " + std::to_string(len) + " for data from node " + std::to_string(from));
  uint32_t& want = sig_taken_[k][from];
  if (seq != want)
    fail(std::string(kCondNames[k]) + ": took signal " + std::to_string(seq) + " of node " + std::to_string(from) + " where " + std::to_string(want) +
         " was next (" + (seq < want ? "a duplicate" : "one lost or overtaken") + ")");
  want = seq + 1;
}

bool MbcfTester::finish_signal() {
  // The programs may still be running: wait until they are done with what was stored.
  auto settled = [this] {
    for (uint32_t k = 0; k < 4; ++k)
      if (sig_active_[k] || word(0, kSignal + kSigStride * k + 12)) return false;
    return true;
  };
  if (!settled()) {
    ++running_clients_;  // re-enter client_done() once the programs have finished
    const uint64_t serial = check_serial_;
    after(200, [this, serial] {
      if (serial == check_serial_) client_done();
    });
    return false;
  }
  ordered_json per = ordered_json::object();
  for (uint32_t k = 0; k < 4; ++k) {
    const std::string c = kCondNames[k];
    for (uint32_t n = 1; n <= clients_; ++n) {
      const uint32_t sent = sig_seq_[n * 4 + k];
      auto it = sig_taken_[k].find(n);
      const uint32_t got = it == sig_taken_[k].end() ? 0 : it->second;
      if (got != sent) fail(c + ": node " + std::to_string(n) + "'s " + std::to_string(sent) + " stored signal(s) were taken " + std::to_string(got) + " time(s)");
    }
    if (fifo_entries(sys_->space(0), task(0), kFifo + kFifoStride * k)) fail(c + ": signals are left in the FIFO");
    const bool every = k == 0 || k == 2;
    if (every && sig_invocations_[k] != sig_succeeded_[k])
      fail(c + ": " + std::to_string(sig_invocations_[k]) + " invocations for " + std::to_string(sig_succeeded_[k]) + " stored signals");
    if (!every && (sig_invocations_[k] > sig_succeeded_[k] || (sig_succeeded_[k] && !sig_invocations_[k])))
      fail(c + ": " + std::to_string(sig_invocations_[k]) + " invocations for " + std::to_string(sig_succeeded_[k]) + " stored signals");
    ordered_json f;
    f["stored"] = sig_succeeded_[k];
    f["invocations"] = sig_invocations_[k];
    f["refused_condition"] = sig_refused_[k];
    f["refused_fifo_full"] = sig_full_[k];
    per[c] = f;
  }
  results_.back().figures["conditions"] = per;
  return true;
}

// ------------------------------------------------------------------ fifoe

void MbcfTester::start_fifoe() {
  init_fifo(sys_->space(0), task(0), kFifoeQ, kFifoeBuf, std::min<uint32_t>(kFifoBufBytes, kFifoeBufPerClient * clients_));
  fifoe_.assign(cfg_.nodes, FifoeClient{});
  fifoe_taken_.assign(cfg_.nodes, 0);
  fifoe_stops_ = fifoe_entries_ = fifoe_max_depth_ = 0;
  fifoe_consumer_done_ = false;
  ++running_clients_;  // node 0's consumer
  for (uint32_t n = 1; n <= clients_; ++n) fifoe_send(n);
  fifoe_consume();
}

void MbcfTester::fifoe_send(uint32_t n) {
  FifoeClient& c = fifoe_[n];
  if (c.failed || c.next == ops_ || c.next - c.base >= kFifoeWindow) return fifoe_wait(n);
  const uint32_t seq = c.next;
  Command f;
  f.cmd = c.retry_next ? Cmd::FifoeRetry : Cmd::FifoeNormal;
  c.retry_next = false;
  f.laddr = kFifoeQ;
  f.length = 8;
  f.data.resize(8);
  store_le(f.data.data(), 4, n);
  store_le(f.data.data() + 4, 4, seq);
  f.opt.reply = ReplyMode::Status;
  f.status_laddr = kFifoeSlots + 4 * (seq % 64);
  set_word(n, f.status_laddr, 0);
  send(n, 0, {f}, [this, n] {
    ++fifoe_[n].next;
    fifoe_send(n);
  });
}

void MbcfTester::fifoe_wait(uint32_t n) {
  FifoeClient& c = fifoe_[n];
  if (c.base == c.next) {
    if (c.base == ops_) return client_done();
    return fifoe_send(n);
  }
  const uint32_t slot = kFifoeSlots + 4 * (c.base % 64);
  const uint64_t serial = check_serial_;
  sys_->poll(n, [this, n, slot] { return word(n, slot) != 0; }, [this, n, slot, serial] {
    if (serial != check_serial_) return;
    FifoeClient& c = fifoe_[n];
    const auto st = static_cast<Status>(word(n, slot));
    if (st == Status::Succeeded) {
      if (!c.failed) c.stops_in_row = 0;
      if (c.failed)
        fail("node " + std::to_string(n) + ": entry " + std::to_string(c.base) + " landed after entry " + std::to_string(c.resend_from) +
             " had failed (the stopped state did not hold the later ones back)");
    } else if (st == Status::FifoeStoppedNow || st == Status::FifoeStopped) {
      if (!c.failed) {
        c.failed = true;
        c.resend_from = c.base;
        fifoe_stops_ += st == Status::FifoeStoppedNow;
      }
    } else {
      fail("node " + std::to_string(n) + ": FIFOe entry " + std::to_string(c.base) + " answered " + to_string(st));
    }
    ++c.base;
    if (c.failed && c.base == c.next) {  // everything sent is known: resend from the first failure
      c.base = c.next = c.resend_from;
      c.failed = false;
      c.retry_next = true;
      ++retries_;
      // Back off the longer the more often in a row this sender found the FIFO stopped.
      const uint32_t span = (kBackoffMaxUs - kBackoffMinUs) << std::min<uint32_t>(c.stops_in_row++, 5);
      after(kBackoffMinUs + rng_[n].below(span), [this, n] { fifoe_send(n); });
      return;
    }
    fifoe_send(n);
  });
}

void MbcfTester::fifoe_consume() {
  // Node 0's user code takes every entry there is, at random moments.
  after(50 + rng_[0].below(450), [this, serial = check_serial_] {
    if (serial != check_serial_) return;
    // One light-weight call takes them all (the bytes it hands back are what it copies).
    sys_->lw_syscall(0, [this, serial]() -> uint64_t {
      if (serial != check_serial_) return 0;
      uint64_t copied = 0;
      TaskSpace& ts = sys_->space(0);
      fifoe_max_depth_ = std::max(fifoe_max_depth_, fifo_entries(ts, task(0), kFifoeQ));
      while (auto e = fifo_pop(ts, task(0), kFifoeQ)) {
        copied += e->size();
        if (e->size() != 8) {
          fail("an entry of " + std::to_string(e->size()) + " bytes, not 8");
          continue;
        }
        const uint32_t from = static_cast<uint32_t>(load_le(e->data(), 4)), seq = static_cast<uint32_t>(load_le(e->data() + 4, 4));
        if (from == 0 || from > clients_) {
          fail("an entry names node " + std::to_string(from));
          continue;
        }
        uint32_t& want = fifoe_taken_[from];
        if (seq != want)
          fail("took entry " + std::to_string(seq) + " of node " + std::to_string(from) + " where " + std::to_string(want) + " was next (" +
               (seq < want ? "a duplicate" : "one lost or overtaken") + ")");
        want = seq + 1;
        ++fifoe_entries_;
      }
      return copied;
    }, [this, serial] {
      if (serial != check_serial_) return;
      const bool senders_done = std::all_of(fifoe_.begin() + 1, fifoe_.end(), [this](const FifoeClient& c) { return c.base == ops_; });
      if (senders_done && !fifoe_consumer_done_) {
        fifoe_consumer_done_ = true;
        return client_done();
      }
      fifoe_consume();
    });
  });
}

void MbcfTester::finish_fifoe() {
  for (uint32_t n = 1; n <= clients_; ++n)
    if (fifoe_taken_[n] != ops_) fail("node " + std::to_string(n) + ": " + std::to_string(fifoe_taken_[n]) + " of its " + std::to_string(ops_) + " entries were taken");
  if (fifo_entries(sys_->space(0), task(0), kFifoeQ)) fail("entries are left in the FIFO");
  if (word(0, kFifoeQ + 16) & 1) fail("the FIFO's stopped flag is still set");
  results_.back().figures["entries"] = fifoe_entries_;
  results_.back().figures["stops"] = fifoe_stops_;
  results_.back().figures["deepest"] = fifoe_max_depth_;
}

// ------------------------------------------------------------------ emb

void MbcfTester::start_emb() {
  emb_writes_.assign(cfg_.nodes, {});
  emb_next_slot_.assign(cfg_.nodes, 0);
  emb_barriers_ = 0;
  for (uint32_t n = 1; n <= clients_; ++n) {
    Task& t = task(n);
    std::fill(std::begin(t.emb_requests), std::end(t.emb_requests), 0);
    std::fill(std::begin(t.emb_replies), std::end(t.emb_replies), 0);
  }
  for (uint32_t n = 1; n <= clients_; ++n) emb_step(n);
}

void MbcfTester::emb_step(uint32_t n) {
  if (left_[n] == 0) return client_done();
  --left_[n];
  emb_burst(n, 1 + static_cast<uint32_t>(rng_[n].below(4)));
}

void MbcfTester::emb_burst(uint32_t n, uint32_t left) {
  Task& t = task(n);
  for (uint32_t c = 0; c < 16; ++c)
    if (t.emb_replies[c] > t.emb_requests[c]) fail("node " + std::to_string(n) + " colour " + std::to_string(c) + ": more replies than requests");
  if (left == 0) {
    // The barrier: poll until the colour's replies have caught up with its requests; every
    // write of that colour issued so far must then be in node 0's memory.
    const uint8_t colour = static_cast<uint8_t>(rng_[n].below(4));
    sys_->poll(n, [this, n, colour] { return task(n).emb_replies[colour] == task(n).emb_requests[colour]; }, [this, n, colour] {
      ++emb_barriers_;
      const TaskSpace& ts = sys_->space(0);
      for (const EmbWrite& w : emb_writes_[n]) {
        if (w.colour != colour) continue;
        std::vector<uint8_t> got(w.bytes.size());
        ts.read(*ts.find(kPtask), w.laddr, got.data(), static_cast<uint32_t>(got.size()));
        if (got != w.bytes) {
          fail("node " + std::to_string(n) + ": after a barrier on colour " + std::to_string(colour) + ", its write to " + std::to_string(w.laddr) + " is not in node 0's memory");
          break;
        }
      }
      emb_step(n);
    });
    return;
  }
  EmbWrite w;
  w.laddr = kSrc + ((n - 1) * emb_slots_ + emb_next_slot_[n]++) * 16;
  w.colour = static_cast<uint8_t>(rng_[n].below(4));
  w.bytes.resize(4 + 4 * rng_[n].below(4));
  for (auto& b : w.bytes) b = static_cast<uint8_t>(rng_[n].next());
  Command c;
  c.cmd = Cmd::Write;
  c.laddr = w.laddr;
  c.length = static_cast<uint32_t>(w.bytes.size());
  c.data = w.bytes;
  c.opt.emb = true;
  c.opt.emb_colour = w.colour;
  emb_writes_[n].push_back(std::move(w));
  send(n, 0, {c}, [this, n, left] { emb_burst(n, left - 1); });
}

void MbcfTester::finish_emb() {
  const TaskSpace& ts = sys_->space(0);
  uint64_t writes = 0;
  for (uint32_t n = 1; n <= clients_; ++n) {
    const Task& t = task(n);
    for (uint32_t c = 0; c < 16; ++c)
      if (t.emb_replies[c] != t.emb_requests[c])
        fail("node " + std::to_string(n) + " colour " + std::to_string(c) + ": " + std::to_string(t.emb_requests[c]) + " requests, " + std::to_string(t.emb_replies[c]) + " replies at the end");
    for (const EmbWrite& w : emb_writes_[n]) {
      std::vector<uint8_t> got(w.bytes.size());
      ts.read(*ts.find(kPtask), w.laddr, got.data(), static_cast<uint32_t>(got.size()));
      if (got != w.bytes) fail("node " + std::to_string(n) + ": its write to " + std::to_string(w.laddr) + " is not in node 0's memory at the end");
      ++writes;
    }
  }
  results_.back().figures["writes"] = writes;
  results_.back().figures["barriers"] = emb_barriers_;
}

// ------------------------------------------------------------------ multicast

void MbcfTester::start_multicast() {
  shadow_.assign(cfg_.nodes, std::vector<uint8_t>(kCandidates * pb_));
  for (uint32_t n = 0; n < cfg_.nodes; ++n) sys_->space(n).read(task(n), kSrc, shadow_[n].data(), kCandidates * pb_);
  mc_round_ = mc_updates_ = mc_members_ = 0;
  running_clients_ = 1;  // the rounds run one after another from the tester itself
  multicast_round();
}

void MbcfTester::multicast_round() {
  // Clear the previous pattern.
  for (uint32_t n = 0; n < cfg_.nodes; ++n)
    for (uint32_t i = 0; i < kCandidates; ++i) {
      Pte& p = task(n).pages.at((kSrc + i * pb_) / pb_);
      p.in_pattern = false;
      p.children.clear();
      p.valid = true;
    }
  if (mc_round_ == ops_) {
    results_.back().figures["rounds"] = mc_round_;
    results_.back().figures["updates"] = mc_updates_;
    results_.back().figures["pattern_pages"] = mc_members_;
    return client_done();
  }
  ++mc_round_;
  // A random tree over a random subset of at least two nodes, each member's page at a random
  // place; the first member is the root.
  Rng& r = rng_[0];
  std::vector<uint32_t> nodes(cfg_.nodes);
  for (uint32_t n = 0; n < cfg_.nodes; ++n) nodes[n] = n;
  for (uint32_t i = cfg_.nodes - 1; i > 0; --i) std::swap(nodes[i], nodes[r.below(i + 1)]);
  const uint32_t members = 2 + static_cast<uint32_t>(r.below(cfg_.nodes - 1));
  pattern_.clear();
  for (uint32_t i = 0; i < members; ++i) {
    const uint32_t n = nodes[i], page = static_cast<uint32_t>(r.below(kCandidates));
    pattern_.push_back({n, page});
    Pte& p = task(n).pages.at((kSrc + page * pb_) / pb_);
    p.in_pattern = true;
    p.pattern_id = mc_round_;
    if (i > 0) {
      const auto [pn, pp] = pattern_[r.below(i)];
      task(pn).pages.at((kSrc + pp * pb_) / pb_).children.push_back(PageRef{n, kPtask, task(n).key, kSrc + page * pb_});
    }
  }
  mc_members_ += members;
  multicast_update(1 + static_cast<uint32_t>(r.below(4)));
}

void MbcfTester::multicast_update(uint32_t left) {
  if (left == 0) return multicast_invalidate();
  Rng& r = rng_[0];
  const uint32_t from = static_cast<uint32_t>(r.below(cfg_.nodes));
  const uint32_t len = 1 + static_cast<uint32_t>(r.below(64)), off = static_cast<uint32_t>(r.below(pb_ - len + 1));
  Command u;
  u.cmd = Cmd::Update;
  u.laddr = kSrc + pattern_[0].second * pb_ + off;
  u.length = len;
  u.data.resize(len);
  for (auto& b : u.data) b = static_cast<uint8_t>(r.next());
  for (const auto& [n, page] : pattern_) std::copy(u.data.begin(), u.data.end(), shadow_[n].begin() + page * pb_ + off);
  forwards_mark_ = counter(stat_name(*sys_, "multicast_forwards"));
  ++mc_updates_;
  call(from, pattern_[0].first, u, [this, left, from](Status st) {
    if (st != Status::Succeeded) fail("round " + std::to_string(mc_round_) + ": UPDATE from node " + std::to_string(from) + " answered " + to_string(st));
    const uint64_t fw = counter(stat_name(*sys_, "multicast_forwards")) - forwards_mark_;
    if (fw != pattern_.size() - 1)
      fail("round " + std::to_string(mc_round_) + ": " + std::to_string(fw) + " copies forwarded along a pattern of " + std::to_string(pattern_.size()) + " pages");
    compare_shadow("UPDATE");
    multicast_update(left - 1);
  });
}

void MbcfTester::compare_shadow(const std::string& after_what) {
  std::vector<uint8_t> now(kCandidates * pb_);
  for (uint32_t n = 0; n < cfg_.nodes; ++n) {
    sys_->space(n).read(task(n), kSrc, now.data(), kCandidates * pb_);
    if (now == shadow_[n]) continue;
    const size_t at = std::mismatch(now.begin(), now.end(), shadow_[n].begin()).first - now.begin();
    const bool member = std::any_of(pattern_.begin(), pattern_.end(), [&](const auto& m) { return m.first == n && m.second == at / pb_; });
    fail("round " + std::to_string(mc_round_) + ", after " + after_what + ": node " + std::to_string(n) + " page " + std::to_string(at / pb_) + " (" +
         (member ? "in" : "not in") + " the pattern) byte " + std::to_string(at % pb_) + " is " + std::to_string(now[at]) + ", not " + std::to_string(shadow_[n][at]));
    shadow_[n] = now;  // report each difference once
  }
}

void MbcfTester::multicast_invalidate() {
  Rng& r = rng_[0];
  const uint32_t from = static_cast<uint32_t>(r.below(cfg_.nodes));
  Command inv;
  inv.cmd = Cmd::Invalidate;
  inv.laddr = kSrc + pattern_[0].second * pb_;
  call(from, pattern_[0].first, inv, [this, from](Status st) {
    if (st != Status::Succeeded) fail("round " + std::to_string(mc_round_) + ": INVALIDATE from node " + std::to_string(from) + " answered " + to_string(st));
    for (uint32_t n = 0; n < cfg_.nodes; ++n)
      for (uint32_t i = 0; i < kCandidates; ++i) {
        const bool member = std::count(pattern_.begin(), pattern_.end(), std::make_pair(n, i)) > 0;
        if (task(n).pages.at((kSrc + i * pb_) / pb_).valid == member)
          fail("round " + std::to_string(mc_round_) + ": after INVALIDATE node " + std::to_string(n) + " page " + std::to_string(i) + (member ? " (in the pattern) is still valid" : " (not in the pattern) was invalidated"));
      }
    compare_shadow("INVALIDATE");
    wait_quiet_then([this] { multicast_round(); });
  });
}

// ------------------------------------------------------------------ report

ordered_json MbcfTester::summary() const {
  ordered_json s;
  s["finished"] = done_;
  uint32_t failed = 0;
  ordered_json list = ordered_json::array();
  for (const Result& r : results_) {
    failed += !r.pass;
    ordered_json a;
    a["check"] = r.name;
    a["outcome"] = r.pass ? "pass" : "fail";
    if (!r.detail.empty()) a["detail"] = r.detail.substr(0, 4000);
    for (auto it = r.figures.begin(); it != r.figures.end(); ++it) a[it.key()] = it.value();
    list.push_back(a);
  }
  s["checks"] = results_.size();
  s["failed"] = failed;
  s["clients"] = clients_;
  s["ops_per_client"] = ops_;
  s["results"] = list;
  add_nic(s);
  return s;
}

std::string MbcfTester::check_failed() const {
  for (const Result& r : results_)
    if (!r.pass) return "mbcf tester: check " + r.name + " failed (seed " + std::to_string(seed_) + "): " + r.detail.substr(0, r.detail.find('\n'));
  if (done_ && results_.size() < checks_.size()) return "mbcf tester: stopped before every check ran";
  return "";
}

std::string MbcfTester::progress(double) const {
  return "check " + std::to_string(std::min(cur_ + 1, checks_.size())) + "/" + std::to_string(checks_.size());
}

}  // namespace mbpsim
