#include "workloads/mbcf_workloads.h"

#include "workloads/mbcf_points.h"
#include "workloads/raytrace_scene.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "models/core/error.h"
#include "models/mbcf/atomic.h"
#include "models/mbp2/mbp2_cards.h"
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
  s.add({"workload.over", T::String, "mbcf", "", "rtt, oneway, peak: what carries the messages: mbcf (MBCF/Ether's commands) | udp (each host's UDP/IP socket stack, sockets.*, with MBCF/Ether's Go-back-N as user-level routines on top, as the thesis's UDP figures) | tcp (each host's TCP/IP socket stack: rtt and oneway with TCP_NODELAY, peak as workload.tcp_nodelay says, raytrace without)", -1e300, 1e300, {"mbcf", "udp", "tcp"}});
  s.add({"workload.iterations", T::Int, 20, "", "rtt, oneway: measured repetitions per point (after 2 unmeasured ones)", 1, 1e9});
  s.add({"workload.transfers", T::Int, 1024, "", "peak: messages timed per size (MBCF_WRITEs; over TCP, after a warm-up of twice the two socket buffers, unless workload.tcp_peak_method is check)", 16, 1e9});
  s.add({"workload.phase_jitter_ms", T::Double, 0.0, "ms",
         "peak over TCP: before each size's connection, an idle of up to this long drawn from the run's seed, so that seeds sample the phase of the kernel's periodic timers (the delayed-ACK tick runs from boot), which picks some streams' steady state; 0: none (a run's points start where the previous one ended)",
         0, 1e6});
  s.add({"workload.tcp_nodelay", T::Bool, false, "",
         "peak over TCP: TCP_NODELAY on both ends (Nagle off). The thesis set it for its SunOS peak rates (6.2.3: 'To cope with measurement for fine-grained communications, I added the TCP_NODELAY option') and not for Solaris's (6.3.2: 'I did not attach the TCP_NODELAY option'); rtt and oneway always set it (6.2.4, 6.3.3)",
         0, 1});
  s.add({"workload.ack_every", T::Int, 16, "", "peak over mbcf and udp: a status check every N transmissions (6.2.3); peak over tcp streams, its own ACKs acknowledging, unless workload.tcp_peak_method is check", 1, 1e6});
  s.add({"workload.tcp_peak_method", T::String, "stream", "",
         "peak over TCP: stream (the stream's steady state between a warm-up and a cool-down, TCP's own ACKs pacing the sender: what the thesis's TCP figures measure, docs/VALIDATION.md) | check (MBCF's method of 6.2.3 on TCP, for comparison: after every workload.ack_every messages the receiver writes a 4-byte status back on the connection, and before each new group the sender reads the status of the group before last; timed from the first send() to the last group's status, the connection's start included)",
         -1e300, 1e300, {"stream", "check"}});
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
  s.add({"workload.display", T::String, "auto", "", "raytrace: how the display node shows the pixels: auto (MBCF: the calculators' MBCF_WRITEs store into its frame buffer, 6.2.6; over udp or tcp: x11) | x11 (the display program draws each chunk with XPutImage through the X server, x11.*: 6.2.6's X11R6 without XFlush; udp and tcp only) | memory (the program only stores the pixels in its memory; udp and tcp only)", -1e300, 1e300, {"auto", "x11", "memory"}});
}

// ------------------------------------------------------------------ base

MbcfWorkload::MbcfWorkload(const Config& c, Stats& stats, uint64_t seed) {
  max_cycles_ = static_cast<uint64_t>(c.get_int("workload.max_cycles"));
  cal_ = std::make_unique<Calendar>("mbcf_calendar");
  cluster_ = systems::make_cluster(*cal_, c, stats, seed);
  sys_ = cluster_.sys.get();
  cfg_ = sys_->config();
  Rng keys(seed, "mbcf.keys");
  for (uint32_t n = 0; n < cfg_.nodes; ++n) {
    Task& t = sys_->create_task(n, kPtask, static_cast<uint32_t>(keys.next() | 1));
    TaskSpace& ts = sys_->space(n);
    ts.map(t, kStatus, (kFifoBuf + 0x4000 - kStatus + ts.page_bytes() - 1) / ts.page_bytes(), kPermRW);
    ts.map(t, kSrc, 0x20000 / ts.page_bytes(), kPermRW);
  }
  if (cfg_.user_construction)
    for (uint32_t n = 0; n < cfg_.nodes; ++n) {
      TaskSpace& ts = sys_->space(n);
      ts.map(*ts.find(kPtask), kImage, (kMaxPacketBytes + ts.page_bytes() - 1) / ts.page_bytes(), kPermRW);
    }
  for (uint32_t n = 0; n < cfg_.nodes; ++n)
    for (uint32_t m = 0; m < cfg_.nodes; ++m) sys_->set_ltask(n, kPtask, m, m, kPtask);
}

bool MbcfWorkload::request(uint32_t node, Request r, std::function<void()> k) {
  if (cfg_.user_construction && r.src_laddr == kNoAddr) {
    Packet p;  // the kernel's fields stay zero: it fills them
    p.cmds = std::move(r.cmds);
    std::vector<uint8_t> image;
    if (!encode(p, image)) return false;
    TaskSpace& ts = sys_->space(node);
    ts.write(*ts.find(kPtask), kImage, image.data(), static_cast<uint32_t>(image.size()));
    r.cmds.clear();
    r.image_laddr = kImage;
  }
  return sys_->syscall(node, kPtask, r, std::move(k));
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

double MbcfWorkload::done_fraction() const {
  const size_t planned = planned_points();
  if (planned == 0) return -1;
  const double share = done_ ? 0 : std::clamp(point_share(), 0.0, 1.0);
  return std::min(1.0, (static_cast<double>(points_.size()) + share) / static_cast<double>(planned));
}

uint64_t MbcfWorkload::calendar_events() const { return cal_->events(); }

ordered_json MbcfWorkload::host_figures(double wall_s) const {
  ordered_json h;
  h["mbcf_events"] = cal_->events();
  h["mbcf_events_per_second"] = cal_->events() / wall_s;
  return h;
}

namespace {

using namespace mbcf_points;

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

 protected:
  size_t planned_points() const override { return cmds_.size() * sizes_.size(); }
  double point_share() const override { return static_cast<double>(i_) / (iters_ + 2); }

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
      request(0, Request{1, {c}}, [this, t0] {
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
    request(0, Request{1, {c}}, [this, t0] {
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
      // The invoked program: one light-weight system call reads the stored entry (6.2.5) and,
      // the queue then empty, resets the running flag; then it answers (the partner's turn)
      // or ends the round trip.
      sys_->set_program(n, kPtask, kHandlerPc, [this, n](const Invocation&, std::function<void()> done) {
        sys_->lw_entry_call(
            n, kPtask,
            [](TaskSpace& ts, Task& t) {
              auto e = signal_reset(ts, t, kSignal);
              if (e && fifo_entries(ts, t, kFifo) == 0) signal_reset(ts, t, kSignal);
              return e;
            },
            [this, n, done](std::optional<std::vector<uint8_t>> e) {
              if (!e) sys_->fail("MBCF_SIGNAL: the invoked program found no stored entry");
              done();
              arrived(n);
            });
      });
    }
    // Where each message's time goes (`path` of each point): the sender hands the frame to its
    // NIC (the tx hook), the receiving routine takes the packet (the accept hook).
    sys_->set_tx_hook([this](uint32_t from, uint32_t, const Packet& p) {
      if (!kicked_ && from == leg_from_ && !p.cmds.empty() && p.cmds[0].cmd == leg_cmd_) {
        kicked_ = true;
        t_kick_ = now();
      }
    });
    sys_->set_accept_hook([this](uint32_t from, uint32_t to, const Packet& p) {
      if (kicked_ && !accepted_ && from == leg_from_ && to == 1 - leg_from_ && !p.cmds.empty() && p.cmds[0].cmd == leg_cmd_) {
        accepted_ = true;
        t_accept_ = now();
      }
    });
  }
  void start() override { next_point(); }

 protected:
  size_t planned_points() const override { return cmds_.size() * sizes_.size(); }
  double point_share() const override { return static_cast<double>(i_) / (iters_ + 2); }

 private:
  static constexpr uint32_t kHandlerPc = 0x4000;
  void next_point() {
    if (ci_ == cmds_.size()) return finish();
    i_ = 0;
    sum_ = 0;
    path_[0] = path_[1] = path_[2] = 0;
    legs_ = 0;
    round();
  }
  void round() {
    if (i_ == 2) {
      mark_cpu();
      for (uint32_t n = 0; n < 2; ++n) os_mark_[n] = sys_->os(n).spent();
      struct_mark_ = sys_->structure_ps();
    }
    t0_ = now();
    send(0);
  }
  // What the receivers' OS spent per one-way message since the mark (us): the terms 6.2.5 says
  // a FIFO and a SIGNAL latency contain beyond a WRITE's.
  nlohmann::ordered_json os_terms() const {
    double trap = 0, copy = 0, invoke = 0;
    for (uint32_t n = 0; n < 2; ++n) {
      const host::OsSpent& s = sys_->os(n).spent();
      trap += static_cast<double>(s.lw_trap_ps - os_mark_[n].lw_trap_ps);
      copy += static_cast<double>(s.lw_copy_ps - os_mark_[n].lw_copy_ps);
      invoke += static_cast<double>(s.invoke_ps - os_mark_[n].invoke_ps);
    }
    nlohmann::ordered_json j;
    j["lw_syscall_us"] = per_message_us(trap);
    j["lw_copy_us"] = per_message_us(copy);
    j["invoke_us"] = per_message_us(invoke);
    return j;
  }
  // The receive routines' work on the FIFO and signal structures per one-way message (us): not
  // the OS's, but part of what a FIFO and a SIGNAL cost beyond a WRITE (a WRITE's is none).
  double structures_us() const { return per_message_us(static_cast<double>(sys_->structure_ps() - struct_mark_)); }
  // `ps` spent over the measured rounds, per one-way message (two per round), in us to the ns.
  double per_message_us(double ps) const { return std::round(ps / (2.0 * iters_ * 1e6) * 1000) / 1000; }
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
    leg_from_ = from;
    leg_cmd_ = c.cmd;
    kicked_ = accepted_ = false;
    t_req_ = now();
    request(from, Request{to, {c}}, [this, to, k] {
      if (k == "signal") return;  // the receiver's program takes it from here
      TaskSpace& ts = sys_->space(to);
      Task& t = *ts.find(kPtask);
      const uint32_t n = sizes_[si_], want = seq_;
      if (k == "write") {
        sys_->poll(to, [&ts, &t, n, want] { return ts.load32(t, kDst + n - 4) == want; }, [this, to] { arrived(to); });
      } else {
        sys_->poll(to, [&ts, &t] { return fifo_entries(ts, t, kFifo) > 0; }, [this, to] {
          sys_->fifo_read(to, kPtask, kFifo, [this, to](std::optional<std::vector<uint8_t>> e) {
            if (!e) sys_->fail("MBCF_FIFO: the light-weight call found the FIFO empty");
            arrived(to);
          });
        });
      }
    });
  }
  void arrived(uint32_t at) {
    if (i_ >= 2 && kicked_ && accepted_) {
      path_[0] += static_cast<double>(t_kick_ - t_req_);
      path_[1] += static_cast<double>(t_accept_ - t_kick_);
      path_[2] += static_cast<double>(now() - t_accept_);
      ++legs_;
    }
    if (at == 1) return send(1);
    if (i_ >= 2) sum_ += static_cast<double>(now() - t0_) + timer_read_ps();
    if (++i_ < iters_ + 2) return round();
    const double lat = sum_ / iters_ / 2 / 1e6;
    std::string name = cmds_[ci_] == "write" ? "MBCF_WRITE" : cmds_[ci_] == "fifo" ? "MBCF_FIFO" : "MBCF_SIGNAL";
    points_.push_back(point(name, sizes_[si_], lat, "us", cpu_us_since_mark() / iters_ / 2));
    if (cmds_[ci_] != "write") {
      points_.back()["receiver_os"] = os_terms();
      points_.back()["routine_structures_us"] = structures_us();
    }
    if (legs_ == 2 * iters_) {  // (every leg seen by both hooks: otherwise unmeasured, left out)
      auto us = [this](double ps) { return std::round(ps / legs_ / 1e6 * 1000) / 1000; };
      nlohmann::ordered_json path;
      path["sender_us"] = us(path_[0]);
      path["network_us"] = us(path_[1]);
      path["receiver_us"] = us(path_[2]);
      path["timer_read_us"] = std::round(timer_read_ps() / 2 / 1e6 * 1000) / 1000;
      points_.back()["path"] = path;
    }
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
  host::OsSpent os_mark_[2];
  uint64_t struct_mark_ = 0;  // sys_->structure_ps() at the mark
  // The message on its way: who sent it, its command, when it was asked for, handed to the
  // NIC and taken by the receiving routine; and the sums over the measured legs.
  uint32_t leg_from_ = 0;
  Cmd leg_cmd_ = Cmd::Write;
  bool kicked_ = false, accepted_ = false;
  uint64_t t_req_ = 0, t_kick_ = 0, t_accept_ = 0;
  double path_[3] = {};
  uint32_t legs_ = 0;
};

// ------------------------------------------------------------------ peak (6.2.3)

class PeakWorkload : public MbcfWorkload {
 public:
  PeakWorkload(const Config& c, Stats& st, uint64_t seed) : MbcfWorkload(c, st, seed) {
    sizes_ = sizes(c, 1);
    count_ = static_cast<uint32_t>(c.get_int("workload.transfers"));
    every_ = status_every(c, count_);
    commands(c, {"write"}, {"write"});  // 6.2.3 streams MBCF_WRITEs only
  }
  void start() override { next_point(); }

 protected:
  size_t planned_points() const override { return sizes_.size(); }
  double point_share() const override { return static_cast<double>(k_) / count_; }

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
    request(0, Request{1, {c}}, [this] { step(); });
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
    request(0, Request{1, {c}}, [this, t0] {
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
  RaytraceWorkload(const Config& c, Stats& st, uint64_t seed)
      : MbcfWorkload(c, st, seed), sc_(c, cfg_.nodes, [this](double cy) { return sys_->cycles_ps(cy); }) {
    commands(c, {"write"}, {"write"});  // 6.2.6: each chunk is one MBCF_WRITE
    if (c.get_string("workload.display") != "auto")
      c.fail("workload.display", "over mbcf the calculators' MBCF_WRITEs store into the display's frame buffer (6.2.6): no display program runs; x11 and memory are for udp and tcp");
    TaskSpace& ts = sys_->space(0);
    const uint32_t bytes = sc_.bytes();
    ts.map(*ts.find(kPtask), kFrame, (bytes + ts.page_bytes() - 1) / ts.page_bytes(), kPermRW);
    next_.assign(sc_.calc + 1, 0);
    for (uint32_t n = 1; n <= sc_.calc; ++n) {
      Task& t = *sys_->space(n).find(kPtask);
      sys_->space(n).store32(t, kStatus, 0);
    }
  }
  void start() override {
    for (uint32_t n = 1; n <= sc_.calc; ++n) {
      next_[n] = n - 1;
      work(n);
    }
  }
  ordered_json summary() const override {
    ordered_json s = sc_.summary(done_, exec_ps_, frame_ok_);
    s["display"] = "frame_buffer";
    add_nic(s);
    return s;
  }
  // The chunks handed to MBCF of the frame's.
  double done_fraction() const override { return static_cast<double>(written_) / std::max<uint32_t>(sc_.chunks, 1); }

 private:
  // Calculator `n` computes its next chunk (and skips the pixels of the others), then writes
  // it to the display's frame buffer; the last write asks for a status to know it has landed.
  void work(uint32_t n) {
    const uint32_t k = next_[n];
    if (k >= sc_.chunks) return;
    sys_->compute(n, sc_.compute_ps(k), [this, n, k] {
      const std::vector<uint8_t> d = sc_.pixels(k);
      Command c = cmd_of(Cmd::Write, kFrame + sc_.first(k), static_cast<uint32_t>(d.size()), d);
      const bool last = sc_.last_of_calculator(k);
      if (last) {
        c.opt.reply = ReplyMode::Status;
        c.status_laddr = kStatus;
      }
      next_[n] = k + sc_.calc;
      ++written_;
      request(n, Request{0, {c}}, [this, n, last] {
        if (!last) return work(n);
        TaskSpace& ts = sys_->space(n);
        Task& t = *ts.find(kPtask);
        sys_->poll(n, [&ts, &t] { return ts.load32(t, kStatus) != 0; }, [this] {
          if (++finished_ < sc_.calc) return;
          exec_ps_ = now();
          check_frame();
          finish();
        });
      });
    });
  }
  void check_frame() {
    TaskSpace& ts = sys_->space(0);
    std::vector<uint8_t> f(sc_.bytes());
    ts.read(*ts.find(kPtask), kFrame, f.data(), sc_.bytes());
    frame_ok_ = sc_.correct(f);
  }
  const RayScene sc_;
  uint32_t finished_ = 0, written_ = 0;
  uint64_t exec_ps_ = 0;
  std::vector<uint32_t> next_;
  bool frame_ok_ = false;
};

}  // namespace

namespace {
using MakeMbcf = std::unique_ptr<Workload> (*)(const Config&, Stats&, uint64_t);
template <class W>
std::unique_ptr<Workload> make(const Config& c, Stats& stats, uint64_t seed) {
  return std::make_unique<W>(c, stats, seed);
}
// The workloads that run on a cluster.
const std::pair<const char*, MakeMbcf> kClusterKinds[] = {
    {"rtt", make<RttWorkload>},     {"oneway", make<OnewayWorkload>}, {"peak", make<PeakWorkload>},
    {"secure", make<SecureWorkload>}, {"datagram", make_datagram_workload}, {"raytrace", make<RaytraceWorkload>},
    {"protection", make<ProtectionTester>}, {"mbcf_tester", make<MbcfTester>},
};
}  // namespace

bool is_mbcf_workload(const std::string& kind) {
  for (const auto& [name, mk] : kClusterKinds)
    if (kind == name) return true;
  return false;
}

std::unique_ptr<Workload> make_mbcf_workload(const std::string& kind, const Config& c, Stats& stats, uint64_t seed) {
  if (is_mbcf_workload(kind) && c.get_string("workload.over") != "mbcf") return make_socket_workload(kind, c, stats, seed);
  for (const auto& [name, mk] : kClusterKinds)
    if (kind == name) return mk(c, stats, seed);
  return nullptr;
}

}  // namespace mbpsim
