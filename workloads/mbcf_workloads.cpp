#include "workloads/mbcf_workloads.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "models/core/error.h"
#include "models/mbcf/atomic.h"
#include "models/mbp2/mbp2_system.h"
#include "models/systems/assembly.h"
#include "workloads/testers/mbcf_tester.h"
#include "workloads/testers/protection_tester.h"

namespace mbpsim {

using nlohmann::json;
using nlohmann::ordered_json;
using namespace mbpsim::mbcf;

void declare_mbcf_workload_params(ParamSchema& s) {
  using T = ParamType;
  s.add({"workload.sizes", T::IntList, json::array({4, 16, 64, 256, 1024}), "bytes", "rtt, oneway, peak: payload sizes to measure (at most 1408: one MBCF packet's data); datagram: payload sizes (UDP up to 65507, in IP fragments beyond one frame; TCP one frame)", 1, 65507});
  s.add({"workload.commands", T::Json, json::array(), "", "the commands measured: rtt [write, read, swap] by default, or send; oneway [write, fifo, signal]; peak, secure and raytrace write only; datagram none (empty: the workload's default)", -1e300, 1e300});
  s.add({"workload.iterations", T::Int, 20, "", "rtt, oneway: measured repetitions per point (after 2 unmeasured ones)", 1, 1e9});
  s.add({"workload.transfers", T::Int, 1024, "", "peak: MBCF_WRITEs per size", 16, 1e9});
  s.add({"workload.ack_every", T::Int, 16, "", "peak: a status check every N transmissions (6.2.3)", 1, 1e6});
  s.add({"workload.protocol", T::String, "udp", "", "datagram: udp | tcp (MBP2 message passing)", -1e300, 1e300, {"udp", "tcp"}});
  s.add({"workload.timeout_us", T::Double, 1e6, "us",
         "datagram, UDP: how long the user library waits for an echo before sending again, and the stream's receiver for the next datagram once the sender is done (a library's choice: longer than a first contact's key exchange, 0.4 s in the MBP2P's firmware; idle simulated time costs nothing)",
         1, 1e9});
  s.add({"workload.calc_nodes", T::Int, 1, "nodes", "raytrace: calculator nodes (node 0 displays)", 1, 253});
  s.add({"workload.payload_bytes", T::Int, 64, "pixels", "raytrace: pixels (1 byte each) per MBCF_WRITE; the unit of cyclic distribution", 1, 1408});
  s.add({"workload.width", T::Int, 576, "pixels", "raytrace: picture width (6.2.6)", 1, 1e5});
  s.add({"workload.height", T::Int, 450, "pixels", "raytrace: picture height", 1, 1e5});
  s.add({"workload.pixel_us", T::Double, 70.0, "us", "raytrace: computation per pixel (6.2.6: 70 us on the SS20)", 0, 1e9});
  s.add({"workload.skip_cycles", T::Double, 8.0, "cycles", "raytrace: a calculator's test for a pixel it is not responsible for (every node runs the whole loop, 6.2.6)", 0, 1e9});
}

// ------------------------------------------------------------------ base

MbcfWorkload::MbcfWorkload(const Config& c, Stats& stats, uint64_t seed) {
  max_cycles_ = static_cast<uint64_t>(c.get_int("workload.max_cycles"));
  cal_ = std::make_unique<Calendar>("mbcf_calendar");
  sys_ = systems::make_cluster(*cal_, c, stats, seed);
  cfg_ = sys_->config();
  Rng keys(seed, "mbcf.keys");
  for (uint32_t n = 0; n < cfg_.nodes; ++n) {
    Task& t = sys_->create_task(n, kPtask, static_cast<uint32_t>(keys.next() | 1));
    TaskSpace& ts = sys_->space(n);
    ts.map(t, kStatus, (kFifoBuf + 0x4000 - kStatus + ts.page_bytes() - 1) / ts.page_bytes(), kPermRW);
    ts.map(t, kSrc, 0x20000 / ts.page_bytes(), kPermRW);
  }
  for (uint32_t n = 0; n < cfg_.nodes; ++n)
    for (uint32_t m = 0; m < cfg_.nodes; ++m) sys_->set_ltask(n, kPtask, m, m, kPtask);
}

std::string MbcfWorkload::stalled() const {
  if (!sys_->failure().empty()) return sys_->failure();
  if (done_ || !cal_->idle()) return "";
  return "the MBCF/Ether system went quiet before the workload finished";
}

ordered_json MbcfWorkload::summary() const {
  ordered_json s;
  s["finished"] = done_;
  s["points"] = points_;
  add_nic(s);
  return s;
}

void MbcfWorkload::add_nic(ordered_json& s) const {
  ordered_json n = sys_->nic_summary();
  if (!n.is_null()) s["nic"] = std::move(n);
}

uint64_t MbcfWorkload::calendar_events() const { return cal_->events(); }

ordered_json MbcfWorkload::host_figures(double wall_s) const {
  ordered_json h;
  h["mbcf_events"] = cal_->events();
  h["mbcf_events_per_second"] = cal_->events() / wall_s;
  return h;
}

namespace {

// The most data the MBCF workloads put in one packet: Tables 6.2 and 6.9 go up to 1408 bytes.
constexpr uint32_t kMbcfMaxSize = 1408;

Command cmd_of(Cmd k, uint32_t laddr, uint32_t n, const std::vector<uint8_t>& data) {
  Command c;
  c.cmd = k;
  c.laddr = laddr;
  c.length = n;
  if (k != Cmd::Read) c.data = data;
  return c;
}

std::vector<uint8_t> pattern(uint32_t n, uint32_t salt) {
  std::vector<uint8_t> d(n);
  for (uint32_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(i * 31 + salt);
  return d;
}

ordered_json point(const std::string& cmd, uint32_t size, double value, const char* unit, double cpu_us) {
  ordered_json p;
  p["command"] = cmd;
  p["size"] = size;
  p["value"] = six_significant(value);  // a 0.045 MB/s rate keeps as many digits as 189 us
  p["unit"] = unit;
  p["host_cpu_us_per_op"] = std::round(cpu_us * 1000) / 1000;
  return p;
}

// The commands a workload measures: `dflt` when workload.commands is empty, else the list, each
// element one of `allowed`. A workload that measures one fixed command (or none) still checks
// the list, so that a command it would not run is an error rather than silently ignored.
std::vector<std::string> commands(const Config& c, std::vector<std::string> dflt, const std::vector<std::string>& allowed) {
  const json& j = c.get_json("workload.commands");
  if (!j.is_array()) c.fail("workload.commands", "must be a list of command names");
  if (j.empty()) return dflt;
  const std::string kind = c.get_string("workload.kind");
  if (allowed.empty()) c.fail("workload.commands", kind + " measures no MBCF command by name: leave it empty");
  std::string names;
  for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string() || std::find(allowed.begin(), allowed.end(), j[i].get<std::string>()) == allowed.end())
      c.fail_at("workload.commands", "workload.commands[" + std::to_string(i) + "]", "must be a command " + kind + " measures: " + names);
    out.push_back(j[i].get<std::string>());
  }
  return out;
}

// The sizes, each within [min, max] (`why` says where max comes from).
std::vector<uint32_t> sizes(const Config& c, uint32_t min, uint32_t max = kMbcfMaxSize, const char* why = "one MBCF packet's data") {
  std::vector<uint32_t> s;
  const auto v = c.get_int_list("workload.sizes");
  if (v.empty()) c.fail("workload.sizes", "must list at least one size (an empty list measures nothing)");
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < static_cast<int64_t>(min) || v[i] > static_cast<int64_t>(max))
      c.fail_at("workload.sizes", "workload.sizes[" + std::to_string(i) + "]",
                "must be between " + std::to_string(min) + " and " + std::to_string(max) + " (" + why + ")");
    s.push_back(static_cast<uint32_t>(v[i]));
  }
  return s;
}

// ------------------------------------------------------------------ rtt (6.2.4)

class RttWorkload : public MbcfWorkload {
 public:
  RttWorkload(const Config& c, Stats& st, uint64_t seed) : MbcfWorkload(c, st, seed) {
    cmds_ = commands(c, {"write", "read", "swap"}, {"write", "read", "swap", "send"});
    sizes_ = sizes(c, 4);
    for (uint32_t s : sizes_)
      if (s % 4) c.fail("workload.sizes", "rtt sizes must be multiples of 4 (MBCF_SWAP works on 32-bit words)");
    iters_ = static_cast<uint32_t>(c.get_int("workload.iterations"));
  }
  void start() override { next_point(); }

 private:
  void next_point() {
    if (ci_ == cmds_.size()) return finish();
    i_ = 0;
    sum_ = 0;
    mark_cpu();
    one();
  }
  void one() {
    const std::string& name = cmds_[ci_];
    const uint32_t n = sizes_[si_];
    const Cmd k = name == "write" || name == "send" ? Cmd::Write : name == "read" ? Cmd::Read : Cmd::Swap;
    Command c = cmd_of(k, kDst, n, pattern(n, i_));
    if (name == "send") {
      // Table 6.1: the MBCF-requesting system call alone, timed around the call.
      const uint64_t t0 = now();
      sys_->syscall(0, kPtask, Request{1, {c}}, [this, t0] {
        // The clock is read before and after; the wait keeps earlier sends off the measured call.
        if (i_ >= 2) sum_ += static_cast<double>(now() - t0) + timer_read_ps();
        sys_->compute(0, 1000000000ull, [this] { measured(); });
      });
      return;
    }
    c.opt.reply = ReplyMode::Status;
    c.status_laddr = kStatus;
    if (k != Cmd::Write) c.data_laddr = kDst;
    Task& t = *sys_->space(0).find(kPtask);
    sys_->space(0).store32(t, kStatus, 0);
    if (i_ == 2) mark_cpu();
    const uint64_t t0 = now();
    sys_->syscall(0, kPtask, Request{1, {c}}, [this, t0] {
      sys_->poll(0, [this] { return sys_->space(0).load32(*sys_->space(0).find(kPtask), kStatus) != 0; },
                 [this, t0] {
                   if (i_ >= 2) sum_ += static_cast<double>(now() - t0) + timer_read_ps();
                   measured();
                 });
    });
  }
  void measured() {
    if (++i_ < iters_ + 2) return one();
    const double lat = sum_ / iters_ / 1e6;
    const std::string name = cmds_[ci_] == "send" ? "MBCF_WRITE_SEND" : "MBCF_" + upper(cmds_[ci_]) + "_STAT";
    points_.push_back(point(name, sizes_[si_], lat, "us", cpu_us_since_mark() / iters_));
    if (++si_ == sizes_.size()) {
      si_ = 0;
      ++ci_;
    }
    next_point();
  }
  static std::string upper(std::string s) {
    for (auto& ch : s) ch = static_cast<char>(std::toupper(ch));
    return s;
  }
  std::vector<std::string> cmds_;
  std::vector<uint32_t> sizes_;
  uint32_t iters_, ci_ = 0, si_ = 0, i_ = 0;
  double sum_ = 0;
};

// ------------------------------------------------------------------ oneway (6.2.5)

class OnewayWorkload : public MbcfWorkload {
 public:
  OnewayWorkload(const Config& c, Stats& st, uint64_t seed) : MbcfWorkload(c, st, seed) {
    cmds_ = commands(c, {"write", "fifo", "signal"}, {"write", "fifo", "signal"});
    sizes_ = sizes(c, 4);
    iters_ = static_cast<uint32_t>(c.get_int("workload.iterations"));
    for (uint32_t n = 0; n < 2; ++n) {
      TaskSpace& ts = sys_->space(n);
      Task& t = *ts.find(kPtask);
      init_fifo(ts, t, kFifo, kFifoBuf, 0x4000);
      init_signal(ts, t, kSignal, SigInvoke::DspInvoke, SigStore::Quew, SigCond::FirstOnlyNonblk, kHandlerPc, 0, 0, kFifo);
      // The invoked program: one light-weight system call takes the entry and resets the
      // flag; then it answers (the partner's turn) or ends the round trip.
      sys_->set_program(n, kPtask, kHandlerPc, [this, n](const Invocation&, std::function<void()> done) {
        sys_->lw_syscall(n, [this, n, done] {
          TaskSpace& ts = sys_->space(n);
          signal_reset(ts, *ts.find(kPtask), kSignal);
          signal_reset(ts, *ts.find(kPtask), kSignal);  // queue now empty: the flag goes down
          done();
          arrived(n);
        });
      });
    }
  }
  void start() override { next_point(); }

 private:
  static constexpr uint32_t kHandlerPc = 0x4000;
  void next_point() {
    if (ci_ == cmds_.size()) return finish();
    i_ = 0;
    sum_ = 0;
    round();
  }
  void round() {
    if (i_ == 2) mark_cpu();
    t0_ = now();
    send(0);
  }
  // Node `from` sends this round's message to the other node.
  void send(uint32_t from) {
    const uint32_t n = sizes_[si_];
    const std::string& k = cmds_[ci_];
    std::vector<uint8_t> d = pattern(n, i_);
    store_le(d.data() + n - 4, 4, seq_ + 1);  // the last word tells the receiver it has arrived
    Command c;
    if (k == "write") c = cmd_of(Cmd::Write, kDst, n, d);
    else if (k == "fifo") c = cmd_of(Cmd::Fifo, kFifo, n, d);
    else c = cmd_of(Cmd::Signal, kSignal, n, d);
    ++seq_;
    const uint32_t to = 1 - from;
    sys_->syscall(from, kPtask, Request{to, {c}}, [this, to, k] {
      if (k == "signal") return;  // the receiver's program takes it from here
      TaskSpace& ts = sys_->space(to);
      Task& t = *ts.find(kPtask);
      const uint32_t n = sizes_[si_], want = seq_;
      if (k == "write") {
        sys_->poll(to, [&ts, &t, n, want] { return ts.load32(t, kDst + n - 4) == want; }, [this, to] { arrived(to); });
      } else {
        sys_->poll(to, [&ts, &t] { return fifo_entries(ts, t, kFifo) > 0; }, [this, to, &ts, &t] {
          sys_->lw_syscall(to, [this, to, &ts, &t] {
            fifo_pop(ts, t, kFifo);
            arrived(to);
          });
        });
      }
    });
  }
  void arrived(uint32_t at) {
    if (at == 1) return send(1);
    if (i_ >= 2) sum_ += static_cast<double>(now() - t0_) + timer_read_ps();
    if (++i_ < iters_ + 2) return round();
    const double lat = sum_ / iters_ / 2 / 1e6;
    std::string name = cmds_[ci_] == "write" ? "MBCF_WRITE" : cmds_[ci_] == "fifo" ? "MBCF_FIFO" : "MBCF_SIGNAL";
    points_.push_back(point(name, sizes_[si_], lat, "us", cpu_us_since_mark() / iters_ / 2));
    if (++si_ == sizes_.size()) {
      si_ = 0;
      ++ci_;
    }
    next_point();
  }
  std::vector<std::string> cmds_;
  std::vector<uint32_t> sizes_;
  uint32_t iters_, ci_ = 0, si_ = 0, i_ = 0, seq_ = 0;
  uint64_t t0_ = 0;
  double sum_ = 0;
};

// ------------------------------------------------------------------ peak (6.2.3)

class PeakWorkload : public MbcfWorkload {
 public:
  PeakWorkload(const Config& c, Stats& st, uint64_t seed) : MbcfWorkload(c, st, seed) {
    sizes_ = sizes(c, 1);
    count_ = static_cast<uint32_t>(c.get_int("workload.transfers"));
    every_ = static_cast<uint32_t>(c.get_int("workload.ack_every"));
    commands(c, {"write"}, {"write"});  // 6.2.3 streams MBCF_WRITEs only
    if (count_ % every_) c.fail("workload.transfers", "must be a multiple of workload.ack_every");
  }
  void start() override { next_point(); }

 private:
  void next_point() {
    if (si_ == sizes_.size()) return finish();
    k_ = 0;
    Task& t = *sys_->space(0).find(kPtask);
    for (uint32_t i = 0; i < 2; ++i) sys_->space(0).store32(t, kStatus + 4 * i, 0);
    mark_cpu();
    t0_ = now();
    step();
  }
  uint32_t group() const { return k_ / every_; }
  void step() {
    Task& t = *sys_->space(0).find(kPtask);
    TaskSpace& ts = sys_->space(0);
    if (k_ == count_) {  // the last group's status closes the measurement
      const uint32_t slot = kStatus + 4 * ((group() - 1) % 2);
      sys_->poll(0, [&ts, &t, slot] { return ts.load32(t, slot) != 0; }, [this] {
        const double s = (now() - t0_) / 1e12;
        const uint32_t n = sizes_[si_];
        points_.push_back(point("MBCF_WRITE", n, count_ * static_cast<double>(n) / s / 1e6, "MB/s", cpu_us_since_mark() / count_));
        point_done(n);
        ++si_;
        next_point();
      });
      return;
    }
    if (k_ % every_ == 0 && group() >= 2) {
      // Before a new group, the acknowledgement of the group before last must be back (one
      // group in flight while the previous one is being acknowledged).
      const uint32_t slot = kStatus + 4 * (group() % 2);
      if (ts.load32(t, slot) == 0) {
        sys_->poll(0, [&ts, &t, slot] { return ts.load32(t, slot) != 0; }, [this] { step(); });
        return;
      }
    }
    const uint32_t n = sizes_[si_];
    Command c = write(k_, n);
    if (k_ % every_ == every_ - 1) {
      c.opt.reply = ReplyMode::Status;
      c.status_laddr = kStatus + 4 * (group() % 2);
    } else if (k_ % every_ == 0) {
      ts.store32(t, kStatus + 4 * (group() % 2), 0);
    }
    ++k_;
    sys_->syscall(0, kPtask, Request{1, {c}}, [this] { step(); });
  }

 protected:
  // The k-th transfer of a point of `n` bytes, and what follows a measured point.
  virtual Command write(uint32_t k, uint32_t n) { return cmd_of(Cmd::Write, kDst, n, pattern(n, k)); }
  virtual void point_done(uint32_t n) {}
  std::vector<uint32_t> sizes_;
  uint32_t count_, every_, si_ = 0, k_ = 0;
  uint64_t t0_ = 0;
};

// ------------------------------------------------------------------ secure (8.3.6)

// The encrypted-transfer workload: the peak-rate stream of `peak`, each transfer to its own
// place in a 64 KiB window of node 1 so that every byte is checked. With crypto on, every frame
// is sealed by the sender's NIC and opened by the receiver's (after a key exchange when
// crypto.keys = dh, paid by the first transfer). After each point the receiver's window is
// compared with what was sent: with authentication, frames altered on the wire (ether.tamper)
// are rejected and resent, and nothing corrupt reaches memory.
class SecureWorkload : public PeakWorkload {
 public:
  SecureWorkload(const Config& c, Stats& st, uint64_t seed) : PeakWorkload(c, st, seed) {
    for (uint32_t n : sizes_)
      if (n > kWindow / 2) c.fail("workload.sizes", "secure: sizes must be at most " + std::to_string(kWindow / 2));
    shadow_.assign(kWindow, 0);
    TaskSpace& ts = sys_->space(1);
    Task& t = *ts.find(kPtask);
    ts.write(t, kDst, shadow_.data(), kWindow);
  }
  // One status-checked transfer first, outside the measurement: it pays for the key exchange
  // when crypto.keys = dh.
  void start() override {
    Command c = cmd_of(Cmd::Write, kSrc, 4, pattern(4, 1));
    c.opt.reply = ReplyMode::Status;
    c.status_laddr = kStatus + 8;
    Task& t = *sys_->space(0).find(kPtask);
    sys_->space(0).store32(t, kStatus + 8, 0);
    const uint64_t t0 = now();
    sys_->syscall(0, kPtask, Request{1, {c}}, [this, t0] {
      sys_->poll(0, [this] { return sys_->space(0).load32(*sys_->space(0).find(kPtask), kStatus + 8) != 0; }, [this, t0] {
        first_us_ = (now() - t0) / 1e6;
        PeakWorkload::start();
      });
    });
  }
  ordered_json summary() const override {
    ordered_json s = MbcfWorkload::summary();
    s["first_transfer_us"] = std::round(first_us_ * 1000) / 1000;
    s["verified_bytes"] = verified_;
    s["corrupted_bytes"] = corrupted_;
    return s;
  }

 private:
  static constexpr uint32_t kWindow = 0x10000;
  Command write(uint32_t k, uint32_t n) override {
    const uint32_t slots = (kWindow - n) / 4 + 1;
    const uint32_t off = static_cast<uint32_t>((static_cast<uint64_t>(k) * 2654435761u) % slots) * 4;
    std::vector<uint8_t> d = pattern(n, k * 7 + si_);
    std::copy(d.begin(), d.end(), shadow_.begin() + off);
    return cmd_of(Cmd::Write, kDst + off, n, d);
  }
  void point_done(uint32_t) override {
    TaskSpace& ts = sys_->space(1);
    Task& t = *ts.find(kPtask);
    std::vector<uint8_t> got(kWindow);
    ts.read(t, kDst, got.data(), kWindow);
    uint64_t bad = 0;
    for (uint32_t a = 0; a < kWindow; ++a) bad += got[a] != shadow_[a];
    verified_ += kWindow;
    corrupted_ += bad;
    points_.back()["corrupted_bytes"] = bad;
  }
  std::vector<uint8_t> shadow_;
  uint64_t verified_ = 0, corrupted_ = 0;
  double first_us_ = 0;
};

// ------------------------------------------------------------------ raytrace (6.2.6)

class RaytraceWorkload : public MbcfWorkload {
 public:
  RaytraceWorkload(const Config& c, Stats& st, uint64_t seed) : MbcfWorkload(c, st, seed) {
    commands(c, {"write"}, {"write"});  // 6.2.6: each chunk is one MBCF_WRITE
    calc_ = static_cast<uint32_t>(c.get_int("workload.calc_nodes"));
    if (calc_ + 1 > cfg_.nodes)
      c.fail("workload.calc_nodes", std::to_string(calc_) + " calculators and a display need mbcf.nodes >= " + std::to_string(calc_ + 1));
    chunk_ = static_cast<uint32_t>(c.get_int("workload.payload_bytes"));
    w_ = static_cast<uint32_t>(c.get_int("workload.width"));
    h_ = static_cast<uint32_t>(c.get_int("workload.height"));
    pixel_ps_ = static_cast<uint64_t>(c.get_double("workload.pixel_us") * 1e6);
    skip_ps_ = sys_->cycles_ps(c.get_double("workload.skip_cycles"));
    TaskSpace& ts = sys_->space(0);
    const uint32_t bytes = w_ * h_;
    ts.map(*ts.find(kPtask), kFrame, (bytes + ts.page_bytes() - 1) / ts.page_bytes(), kPermRW);
    chunks_ = (bytes + chunk_ - 1) / chunk_;
    next_.assign(calc_ + 1, 0);
    for (uint32_t n = 1; n <= calc_; ++n) {
      Task& t = *sys_->space(n).find(kPtask);
      sys_->space(n).store32(t, kStatus, 0);
    }
  }
  void start() override {
    for (uint32_t n = 1; n <= calc_; ++n) {
      next_[n] = n - 1;
      work(n);
    }
  }
  ordered_json summary() const override {
    ordered_json s;
    s["finished"] = done_;
    s["exec_time_s"] = std::round(exec_ps_ / 1e9) / 1e3;
    s["calc_nodes"] = calc_;
    s["payload_bytes"] = chunk_;
    s["packets"] = chunks_;
    s["frame_correct"] = frame_ok_;
    add_nic(s);
    return s;
  }

 private:
  static uint8_t pixel(uint32_t i) { return static_cast<uint8_t>((i * 2654435761u) >> 24); }
  // Calculator `n` computes its next chunk (and skips the pixels of the others), then writes
  // it to the display's frame buffer; the last write asks for a status to know it has landed.
  void work(uint32_t n) {
    const uint32_t k = next_[n];
    if (k >= chunks_) return;
    const uint32_t first = k * chunk_, len = std::min(chunk_, w_ * h_ - first);
    const uint32_t skipped = k + calc_ < chunks_ ? (calc_ - 1) * chunk_ : 0;
    compute_and_send(n, k, first, len, static_cast<uint64_t>(len) * pixel_ps_ + skipped * skip_ps_);
  }
  void compute_and_send(uint32_t n, uint32_t k, uint32_t first, uint32_t len, uint64_t ps) {
    sys_->compute(n, ps, [this, n, k, first, len] {
      std::vector<uint8_t> d(len);
      for (uint32_t i = 0; i < len; ++i) d[i] = pixel(first + i);
      Command c = cmd_of(Cmd::Write, kFrame + first, len, d);
      const bool last = k + calc_ >= chunks_;
      if (last) {
        c.opt.reply = ReplyMode::Status;
        c.status_laddr = kStatus;
      }
      next_[n] = k + calc_;
      sys_->syscall(n, kPtask, Request{0, {c}}, [this, n, last] {
        if (!last) return work(n);
        TaskSpace& ts = sys_->space(n);
        Task& t = *ts.find(kPtask);
        sys_->poll(n, [&ts, &t] { return ts.load32(t, kStatus) != 0; }, [this] {
          if (++finished_ < calc_) return;
          exec_ps_ = now();
          check_frame();
          finish();
        });
      });
    });
  }
  void check_frame() {
    TaskSpace& ts = sys_->space(0);
    std::vector<uint8_t> f(w_ * h_);
    ts.read(*ts.find(kPtask), kFrame, f.data(), w_ * h_);
    frame_ok_ = true;
    for (uint32_t i = 0; i < f.size(); ++i) frame_ok_ &= f[i] == pixel(i);
  }
  uint32_t calc_, chunk_, w_, h_, chunks_, finished_ = 0;
  uint64_t pixel_ps_, skip_ps_, exec_ps_ = 0;
  std::vector<uint32_t> next_;
  bool frame_ok_ = false;
};

}  // namespace

// ------------------------------------------------------------------ datagram (8.3.1, 8.3.3)

// Message passing on the MBP2: UDP/IP or TCP/IP datagrams between user tasks, with no system
// call and no copy by either host. Per size: the round trip of an echo (node 1's task polls
// its receive ring and sends each datagram back), then the peak rate of a stream of
// `workload.transfers` datagrams that node 1's task takes from its ring as they come; every
// payload is compared with what was sent. The sender's host CPU per datagram is reported.
class DatagramWorkload : public MbcfWorkload {
 public:
  DatagramWorkload(const Config& c, Stats& st, uint64_t seed) : MbcfWorkload(c, st, seed) {
    mbp2_ = dynamic_cast<mbp2::Mbp2System*>(sys_.get());
    if (!mbp2_) c.fail("workload.kind", "datagram: UDP/TCP steering is the MBP2's; needs mbcf.nic = mbp2");
    if (cfg_.nodes < 2) c.fail("mbcf.nodes", "datagram: needs two nodes");
    commands(c, {}, {});  // message passing: no MBCF command
    proto_ = c.get_string("workload.protocol") == "tcp" ? mbp2::kIpProtoTcp : mbp2::kIpProtoUdp;
    sizes_ = sizes(c, 1, mbp2::kUdpMaxPayload, "UDP's largest datagram");
    // UDP datagrams longer than one frame go in IP fragments, which the receiving NIC holds in
    // half its receive buffers at most while it reassembles; TCP segments fit one frame.
    const uint32_t mtu = mbp2_->mtu(), rx_share = std::max<uint32_t>(1, cfg_.rx_ring / 2);
    uint32_t largest = 0;
    for (uint32_t n : sizes_) {
      largest = std::max(largest, n);
      if (proto_ == mbp2::kIpProtoTcp && n + mbp2::kIpHeader + mbp2::kTcpHeader > mtu)
        c.fail("workload.sizes", "datagram: a TCP segment of " + std::to_string(n) + " bytes does not fit one frame (" +
                                     std::to_string(mtu - mbp2::kIpHeader - mbp2::kTcpHeader) + " bytes at most here)");
      if (proto_ == mbp2::kIpProtoUdp && n > mbp2::kUdpMaxPayload)
        c.fail("workload.sizes", "datagram: a UDP datagram of " + std::to_string(n) + " bytes is longer than IP allows (" +
                                     std::to_string(mbp2::kUdpMaxPayload) + " bytes at most)");
      if (proto_ == mbp2::kIpProtoUdp && mbp2::udp_frames(n, mtu) > rx_share)
        c.fail("workload.sizes", "datagram: a UDP datagram of " + std::to_string(n) + " bytes takes " + std::to_string(mbp2::udp_frames(n, mtu)) +
                                     " fragments, more than the " + std::to_string(rx_share) + " receive buffers a NIC reassembles in (half of mbcf.rx_ring)");
    }
    // The user's buffers and ring: the usual ones while a datagram fits a frame, larger ones
    // mapped apart beyond.
    if (largest + kSlotHeader > kSlotBytes) {
      buffer_bytes_ = (largest + 63) & ~63u;
      slot_bytes_ = (mbp2::Mbp2System::kSlotHeader + largest + 63) & ~63u;
      src_ = kLargeArea;
      ring_ = kLargeArea + ((kBuffers * buffer_bytes_ + 0xffff) & ~0xffffu);
      for (uint32_t n = 0; n < 2; ++n) {
        TaskSpace& ts = sys_->space(n);
        const uint64_t bytes = ring_ - src_ + mbp2::Mbp2System::kRingHeader + static_cast<uint64_t>(kSlots) * slot_bytes_;
        ts.map(*ts.find(kPtask), src_, static_cast<uint32_t>((bytes + ts.page_bytes() - 1) / ts.page_bytes()), kPermRW);
      }
    }
    iters_ = static_cast<uint32_t>(c.get_int("workload.iterations"));
    count_ = static_cast<uint32_t>(c.get_int("workload.transfers"));
    timeout_ps_ = static_cast<uint64_t>(c.get_double("workload.timeout_us") * 1e6);
    for (uint32_t n = 0; n < 2; ++n) {
      mbp2_->init_ring(n, kPtask, ring_, kSlots, slot_bytes_);
      const bool ok = proto_ == mbp2::kIpProtoUdp
                          ? mbp2_->bind_udp(n, kPtask, kPort, ring_)
                          : mbp2_->connect_tcp(n, kPtask, kPort, 1 - n, kPort, ring_, 1000 * (n + 1), 1000 * (2 - n));
      if (!ok) internal_error("datagram: binding the port failed");
    }
  }
  void start() override { next_size(); }
  ordered_json summary() const override {
    ordered_json s = MbcfWorkload::summary();
    s["protocol"] = proto_ == mbp2::kIpProtoTcp ? "tcp" : "udp";
    s["checked_bytes"] = checked_;
    s["mismatched_datagrams"] = mismatched_;
    s["send_buffer_waits"] = buffer_waits_;
    s["echo_timeouts"] = echo_timeouts_;
    s["stray_datagrams"] = stray_;
    s["duplicate_datagrams"] = duplicates_;
    return s;
  }

 private:
  static constexpr uint32_t kSlots = 32, kSlotBytes = 1536, kSlotHeader = mbp2::Mbp2System::kSlotHeader;
  static constexpr uint32_t kLargeArea = 0x1000000;  // buffers and ring for datagrams beyond a frame
  static constexpr uint16_t kPort = 7;
  const char* name() const { return proto_ == mbp2::kIpProtoTcp ? "TCP" : "UDP"; }
  // The user's send buffers: the PGE reads a payload when it fetches the send structure, so a
  // task may not reuse a buffer before (send() waits for it); the stream cycles through
  // kBuffers of them.
  static constexpr uint32_t kBuffers = 32, kBufferBytes = 2048;
  uint32_t buffer(uint32_t k) const { return src_ + (k % kBuffers) * buffer_bytes_; }
  mbp2::Mbp2System::DatagramRequest req(uint32_t from, uint32_t n, uint32_t k) const {
    mbp2::Mbp2System::DatagramRequest d;
    d.proto = proto_;
    d.dst_node = 1 - from;
    d.src_port = d.dst_port = kPort;
    d.laddr = buffer(k);
    d.len = n;
    return d;
  }
  bool ready(uint32_t node) {
    TaskSpace& ts = sys_->space(node);
    const Task& t = *ts.find(kPtask);
    return ts.load32(t, ring_ + 8) != ts.load32(t, ring_ + 12);
  }
  // A datagram's payload: pattern(), its first bytes replaced by the salt (big-endian; below 4
  // bytes its low-order bytes), so a datagram says which it is.
  static std::vector<uint8_t> dgram(uint32_t n, uint32_t salt) {
    std::vector<uint8_t> d = pattern(n, salt);
    const uint32_t m = std::min(n, 4u);
    for (uint32_t i = 0; i < m; ++i) d[i] = static_cast<uint8_t>(salt >> (8 * (m - 1 - i)));
    return d;
  }
  static uint32_t salt_of(const std::vector<uint8_t>& p) {
    uint32_t v = 0;
    for (uint32_t i = 0; i < p.size() && i < 4; ++i) v = v << 8 | p[i];
    return v;
  }
  // Some datagram the workload sent, if not the one expected: a try before, a copy duplicated
  // on the wire, one left from an earlier phase. Anything else is a payload the system damaged.
  static bool is_dgram(const std::vector<uint8_t>& p) { return p == dgram(static_cast<uint32_t>(p.size()), salt_of(p)); }
  // Takes the next datagram of the stream: each says which it is (from 4 bytes; below, the next
  // one sent or a later one within 256, found by its pattern). A second copy of one (duplicated
  // on the wire) is not taken again, and another datagram (a request of the echo phase,
  // duplicated or late) is not the stream's.
  void take_stream(uint32_t n) {
    std::vector<uint8_t> got;
    if (!mbp2_->take(1, kPtask, ring_, &got)) internal_error("datagram: the ring was ready but empty");
    checked_ += got.size();
    int64_t k = -1;
    if (n >= 4) {
      const uint32_t salt = salt_of(got);
      if (got.size() == n && salt >= 1000 && salt - 1000 < count_ && got == dgram(n, salt)) k = salt - 1000;
    } else {
      for (uint32_t j = next_ > 256 ? next_ - 256 : 0; j < count_ && j < next_ + 256 && k < 0; ++j)
        if (got == dgram(n, 1000 + j)) k = j;
    }
    if (k < 0) {
      if (is_dgram(got)) ++stray_;
      else ++mismatched_;
      return;
    }
    if (seen_[k]) {
      ++duplicates_;
      return;
    }
    seen_[k] = true;
    ++taken_;
    next_ = std::max<uint32_t>(next_, static_cast<uint32_t>(k) + 1);
  }
  // Writes the datagram of `salt` into send buffer `buf` and sends it from there, once the PGE
  // has fetched the datagram that used the buffer before (the task polls the count of fetched
  // send structures its NIC writes back).
  void send(uint32_t from, uint32_t n, uint32_t salt, uint32_t buf, std::function<void()> k) { send(from, dgram(n, salt), buf, std::move(k)); }
  void send(uint32_t from, std::vector<uint8_t> p, uint32_t buf, std::function<void()> k) {
    const uint32_t b = buf % kBuffers;
    const int64_t before = last_use_[from][b];
    const int64_t m = sent_[from]++;
    last_use_[from][b] = m;
    auto go = [this, from, p = std::move(p), buf, k = std::move(k)]() mutable {
      const uint32_t n = static_cast<uint32_t>(p.size());
      sys_->space(from).write(*sys_->space(from).find(kPtask), buffer(buf), p.data(), n);
      if (!mbp2_->send_datagram(from, kPtask, req(from, n, buf), std::move(k))) internal_error("datagram: a send was refused");
    };
    auto fetched = [this, from, before] { return static_cast<int64_t>(mbp2_->fetched(from, kPtask)) > before; };
    if (fetched()) return go();
    ++buffer_waits_;
    sys_->poll(from, fetched, std::move(go));
  }
  void next_size() {
    if (si_ == sizes_.size()) return finish();
    fragmented_ = proto_ == mbp2::kIpProtoUdp && mbp2::udp_frames(sizes_[si_], mbp2_->mtu()) > 1;
    i_ = 0;
    sum_ = 0;
    mark_cpu();
    echo();
  }
  // --- round trip: node 0 sends, node 1's task echoes every datagram it takes, node 0 takes
  // the echo. A datagram or its echo lost on the wire: node 0 sends again (a new pattern) after
  // workload.timeout_us; an echo of an earlier try that arrives later is taken and ignored.
  void echo() {
    const uint32_t n = sizes_[si_];
    if (i_ == 0 && !serving_) {
      serving_ = true;
      serve(++serve_gen_);
    }
    if (i_ == 2 && tries_ == 0) mark_cpu();
    const uint64_t t0 = now();
    const uint32_t salt = ++salt_;
    ++tries_;
    send(0, n, salt, 0, [this, n, t0, salt] { await_echo(n, t0, salt, now() + timeout_ps_); });  // one buffer: one datagram out
  }
  void await_echo(uint32_t n, uint64_t t0, uint32_t salt, uint64_t deadline) {
    sys_->poll_until(0, [this] { return ready(0); }, deadline, [this, n, t0, salt, deadline](bool got) {
      if (!got) {
        ++echo_timeouts_;
        return echo();
      }
      std::vector<uint8_t> p;
      if (!mbp2_->take(0, kPtask, ring_, &p)) internal_error("datagram: the ring was ready but empty");
      checked_ += p.size();
      if (p != dgram(n, salt)) {
        if (is_dgram(p)) ++stray_;
        else ++mismatched_;
        return await_echo(n, t0, salt, deadline);
      }
      tries_ = 0;
      if (i_ >= 2) sum_ += static_cast<double>(now() - t0) + timer_read_ps();
      if (++i_ < iters_ + 2) return echo();
      serving_ = false;
      // The sender's CPU per datagram: it sent one and took one per round trip.
      points_.push_back(point(std::string(name()) + "_ECHO", n, sum_ / iters_ / 1e6, "us", cpu_us_since_mark() / iters_ / 2));
      stream();
    });
  }
  // Node 1's task during an echo phase (`gen`): takes each datagram and sends it back.
  void serve(uint32_t gen) {
    auto over = [this, gen] { return !serving_ || gen != serve_gen_; };
    sys_->poll(1, [this, over] { return ready(1) || over(); }, [this, gen, over] {
      if (over()) return;  // the echo phase is over: what arrives now is the stream's
      std::vector<uint8_t> p;
      if (!mbp2_->take(1, kPtask, ring_, &p)) internal_error("datagram: the ring was ready but empty");
      checked_ += p.size();
      send(1, std::move(p), 0, [this, gen] { serve(gen); });
    });
  }
  // --- peak rate: node 0 streams, node 1's task takes what arrives
  void stream() {
    const uint32_t n = sizes_[si_];
    k_ = taken_ = next_ = 0;
    seen_.assign(count_, false);
    const uint64_t dropped = drops();
    if (tcp()) retransmits_before_ = retransmits();
    mark_cpu();
    t0_ = now();
    receive_next(n, dropped);
    send_next(n);
  }
  // Between NICs that encrypt, the receiver loses sealed frames it could not open or had no
  // buffer for without knowing what they carried: here every sealed frame is a datagram,
  // unless datagrams go in fragments (a lost fragment's datagram is counted when its
  // reassembly gives up).
  uint64_t drops() const { return mbp2_->datagrams_dropped(1) + (fragmented_ ? 0 : mbp2_->sealed_frames_lost(1)); }
  void send_next(uint32_t n) {
    if (k_ == count_) return;
    const uint32_t salt = 1000 + k_;
    ++k_;
    send(0, n, salt, k_, [this, n] { send_next(n); });
  }
  // UDP has no flow control: a receiving NIC that falls behind the wire drops datagrams
  // (counted). The stream ends when every datagram was taken or dropped (the harness reads the
  // drop counters); the rate is the payload delivered.
  // Datagrams lost on the wire are never counted by the receiver's NIC: once the sender is done
  // and nothing arrived for workload.timeout_us, the stream ends with them counted as lost and
  // its rate taken at the last datagram.
  // TCP's NICs recover what the receiver dropped or the wire lost (the receiver's window and
  // the sender's images pace the stream): it ends when every segment was taken, or when the
  // sender's NIC holds nothing unacknowledged and nothing came for workload.timeout_us (a
  // connection given up: mbp2.tcp_max_retries).
  bool tcp() const { return proto_ == mbp2::kIpProtoTcp; }
  bool tcp_pending() const { return tcp() && mbp2_->tcp_unacked(0, kPort, 1, kPort) > 0; }
  void receive_next(uint32_t n, uint64_t dropped_before) {
    auto accounted = [this, dropped_before] { return taken_ + (tcp() ? 0 : drops() - dropped_before) >= count_; };
    sys_->poll_until(1, [this, accounted] { return ready(1) || accounted(); }, now() + timeout_ps_, [this, n, dropped_before, accounted](bool got) {
      if (!got && (k_ < count_ || tcp_pending())) return receive_next(n, dropped_before);  // the sender is still at it
      if (ready(1)) {
        take_stream(n);
        last_take_ = now();
        if (!accounted()) return receive_next(n, dropped_before);
      }
      const double s = ((got ? now() : last_take_) - t0_) / 1e12;
      ordered_json p = point(std::string(name()) + "_STREAM", n, taken_ * static_cast<double>(n) / s / 1e6, "MB/s", cpu_us_since_mark() / count_);
      p["dropped"] = drops() - dropped_before;
      // (The NIC's drops include second copies it had no room for: never below zero. TCP's
      // drops were sent again: what was not taken is lost.)
      p["lost"] = std::max<int64_t>(0, static_cast<int64_t>(count_) - taken_ - static_cast<int64_t>(tcp() ? 0 : drops() - dropped_before));
      if (tcp()) p["retransmitted"] = retransmits() - retransmits_before_;
      points_.push_back(p);
      ++si_;
      next_size();
    });
  }

  mbp2::Mbp2System* mbp2_ = nullptr;
  uint32_t src_ = kSrc, ring_ = kDst, buffer_bytes_ = kBufferBytes, slot_bytes_ = kSlotBytes;
  bool fragmented_ = false;  // this size's datagrams go in IP fragments
  uint8_t proto_ = mbp2::kIpProtoUdp;
  std::vector<uint32_t> sizes_;
  uint32_t iters_ = 0, count_ = 0, si_ = 0, i_ = 0, k_ = 0, taken_ = 0, next_ = 0;
  double sum_ = 0;
  uint64_t t0_ = 0, checked_ = 0, mismatched_ = 0, buffer_waits_ = 0;
  uint64_t retransmits_before_ = 0;
  uint64_t retransmits() const { return mbp2_->tcp_retransmits(0); }
  uint64_t timeout_ps_ = 0, last_take_ = 0, echo_timeouts_ = 0, stray_ = 0, duplicates_ = 0;
  // Echo tries have salts of their own, apart from the stream's (1000 + datagram number).
  static constexpr uint32_t kEchoSalt0 = 0x80000000u;
  uint32_t salt_ = kEchoSalt0, tries_ = 0, serve_gen_ = 0;
  bool serving_ = false;
  std::vector<bool> seen_;  // the stream's datagrams taken
  int64_t sent_[2] = {0, 0};  // datagrams each node's task has sent
  std::vector<int64_t> last_use_[2] = {std::vector<int64_t>(kBuffers, -1), std::vector<int64_t>(kBuffers, -1)};
};

std::unique_ptr<Workload> make_mbcf_workload(const std::string& kind, const Config& c, Stats& stats, uint64_t seed) {
  if (kind == "rtt") return std::make_unique<RttWorkload>(c, stats, seed);
  if (kind == "oneway") return std::make_unique<OnewayWorkload>(c, stats, seed);
  if (kind == "peak") return std::make_unique<PeakWorkload>(c, stats, seed);
  if (kind == "secure") return std::make_unique<SecureWorkload>(c, stats, seed);
  if (kind == "datagram") return std::make_unique<DatagramWorkload>(c, stats, seed);
  if (kind == "raytrace") return std::make_unique<RaytraceWorkload>(c, stats, seed);
  if (kind == "protection") return std::make_unique<ProtectionTester>(c, stats, seed);
  if (kind == "mbcf_tester") return std::make_unique<MbcfTester>(c, stats, seed);
  return nullptr;
}

}  // namespace mbpsim
