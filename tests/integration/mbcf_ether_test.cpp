// MBCF/Ether end to end: Go-back-N under seeded loss, multicast with acknowledge combining,
// the page-fault save area, task migration, and the calibrated figures of the thesis.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "models/core/rng.h"
#include "models/mbcf/atomic.h"
#include "models/mbcf/ether_system.h"
#include "models/mbp2/mbp2_system.h"
#include "tests/test_util.h"

namespace mbpsim::mbcf {
namespace {

struct Rig {
  Stats stats;
  Calendar cal{"cal"};
  EtherSysConfig cfg;
  std::unique_ptr<EtherSystem> sys;
  // `mbp2`: the same protocol run by MBP2 NICs (the PME's firmware) instead of host kernels.
  explicit Rig(EtherSysConfig c, uint64_t seed = 1, bool mbp2 = false) : cfg(c) {
    if (mbp2)
      sys = std::make_unique<mbp2::Mbp2System>(cal, cfg, mbp2::Mbp2Config{}, stats, seed);
    else
      sys = std::make_unique<EtherSystem>(cal, cfg, stats, seed);
    for (uint32_t n = 0; n < cfg.nodes; ++n) {
      Task& t = sys->create_task(n, 1, 1000 + n);
      sys->space(n).map(t, 0x10000, 16, kPermRW);
    }
    for (uint32_t n = 0; n < cfg.nodes; ++n)
      for (uint32_t m = 0; m < cfg.nodes; ++m) sys->set_ltask(n, 1, m, m, 1);
  }
  Task& task(uint32_t n) { return *sys->space(n).find(1); }
  uint32_t word(uint32_t n, uint32_t a) { return sys->space(n).load32(task(n), a); }
  void run(double ms) { sc_core::sc_start(sc_core::sc_time(ms, sc_core::SC_MS)); }
  // A packet built by hand (to be encoded and put on the wire by a test) from task 1 of node
  // `from` to task 1 of node `to`, with the right keys.
  Packet hand_built(uint32_t from, uint32_t to, std::vector<Command> cmds) {
    Packet p;
    p.dst_mac = mac_of(to);
    p.src_mac = mac_of(from);
    p.src_pnode = from;
    p.src_ptask = 1;
    p.src_key = task(from).key;
    p.dst_ptask = 1;
    p.dst_key = task(to).key;
    p.cmds = std::move(cmds);
    return p;
  }
};

Command write_word(uint32_t laddr, uint32_t v, ReplyMode rm = ReplyMode::None) {
  Command c = word_command(Cmd::Write, laddr, v);
  c.opt.reply = rm;
  if (rm != ReplyMode::None) c.status_laddr = 0x10000;
  return c;
}

uint64_t mbcf_stat(Rig& r, const char* name) { return r.stats.dump()["system"]["mbcf"][name].get<uint64_t>(); }

// The target address of every MBCF_WRITE from node 0 that node 1 accepts, in order.
void record_writes(Rig& r, std::vector<uint32_t>& order) {
  r.sys->set_accept_hook([&order](uint32_t from, uint32_t to, const Packet& p) {
    if (from == 0 && to == 1 && !p.cmds.empty() && p.cmds[0].cmd == Cmd::Write) order.push_back(p.cmds[0].laddr);
  });
}

// The `n` word writes to `base`, `base` + 4, ... with values `v0`, `v0` + 1, ... were each
// accepted once, in order, and are in node 1's memory.
void expect_writes_in_order(Rig& r, const std::vector<uint32_t>& order, uint32_t base, uint32_t v0, uint32_t n) {
  ASSERT_EQ(order.size(), n) << "each write accepted once\n" << r.sys->dump();
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_EQ(order[i], base + 4 * i) << "accepted out of order at " << i;
    EXPECT_EQ(r.word(1, base + 4 * i), v0 + i) << "write " << i;
  }
}

// Node 0 sends `n` tagged FIFO entries to node 1; every tag must arrive once, in order, and
// the sender's window must drain. Returns the most packets seen outstanding (sampled at every
// delivery and every 200 us).
size_t exactly_once_in_order(EtherSysConfig c, uint64_t seed, uint32_t n, int limit_ms = 2000,
                             const std::function<void(Rig&)>& check = nullptr, bool mbp2 = false) {
  std::printf("seed %llu%s\n", static_cast<unsigned long long>(seed), mbp2 ? " (MBP2 NICs)" : "");
  Rig r(c, seed, mbp2);
  init_fifo(r.sys->space(1), r.task(1), 0x10100, 0x11000, 0x8000);
  std::vector<uint32_t> got;
  size_t most = 0;
  r.sys->set_accept_hook([&](uint32_t from, uint32_t to, const Packet& p) {
    if (from == 0 && to == 1 && !p.cmds.empty() && p.cmds[0].cmd == Cmd::Fifo) got.push_back(static_cast<uint32_t>(load_le(p.cmds[0].data.data(), 4)));
    most = std::max<size_t>(most, r.sys->unacked(0, 1));
  });
  uint32_t sent = 0;
  std::function<void()> next = [&] {
    if (sent == n) return;
    Command f;
    f.cmd = Cmd::Fifo;
    f.laddr = 0x10100;
    f.length = 4;
    f.data.resize(4);
    store_le(f.data.data(), 4, sent++);
    ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {f}}, next));
  };
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  next();
  // Node 1 drains its FIFO now and then so it never fills.
  std::function<void()> drain = [&] {
    while (fifo_pop(r.sys->space(1), r.task(1), 0x10100)) {
    }
    most = std::max<size_t>(most, r.sys->unacked(0, 1));
    r.cal.after(200'000'000, drain);
  };
  drain();
  for (int i = 0; i < limit_ms / 5 && !(sent == n && r.sys->quiet()); ++i) r.run(5);
  EXPECT_EQ(got.size(), n) << "seed " << seed << "\n" << r.sys->dump();
  for (uint32_t i = 0; i < std::min<size_t>(n, got.size()); ++i) {
    EXPECT_EQ(got[i], i) << "seed " << seed;
    if (got[i] != i) break;
  }
  EXPECT_TRUE(r.sys->quiet()) << r.sys->dump();
  EXPECT_EQ(r.sys->unacked(0, 1), 0u);
  EXPECT_LE(most, c.th2) << "seed " << seed;
  if (check) check(r);
  return most;
}

TEST(GoBackN, NoLossSwitch) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  exactly_once_in_order(c, 1, 500);
}

// One seed per test: SystemC elaborates once per process. Each runs with three NICs: MBCF/Ether's
// conventional one, the same streaming each frame through a small FIFO (the LANCE:
// nic.tx_streams), and the MBP2 running the protocol in firmware.
struct NicSeed {
  bool mbp2;
  uint64_t seed;
  bool streams = false;
};
std::string nic_seed_name(const ::testing::TestParamInfo<NicSeed>& i) {
  return std::string(i.param.mbp2 ? "mbp2_" : i.param.streams ? "lance_" : "ether_") + std::to_string(i.param.seed);
}
std::vector<NicSeed> nic_seeds(uint64_t n) {
  std::vector<NicSeed> v;
  for (int kind : {0, 1, 2})
    for (uint64_t s = 1; s <= n; ++s) v.push_back({kind == 2, s, kind == 1});
  return v;
}
EtherSysConfig with_nic(EtherSysConfig c, const NicSeed& p) {
  c.nic_tx_streams = p.streams;
  return c;
}
class GoBackNSeeded : public ::testing::TestWithParam<NicSeed> {
 protected:
  uint64_t seed() const { return GetParam().seed; }
  bool mbp2() const { return GetParam().mbp2; }
  EtherSysConfig nic(EtherSysConfig c) const { return with_nic(c, GetParam()); }
};

TEST_P(GoBackNSeeded, BernoulliLossOnAHubIsRecovered) {
  EtherSysConfig c;
  c.ether.loss = 0.05;
  c.ack_timeout_us = 2000;
  exactly_once_in_order(nic(c), seed(), 400, 2000, nullptr, mbp2());
}

TEST_P(GoBackNSeeded, BurstLossAndSmallRingOnASwitch) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  c.ether.burst_enter = 0.02;
  c.ether.burst_leave = 0.3;
  c.rx_ring = 2;  // receiver buffer exhaustion drops frames too
  c.ack_timeout_us = 2000;
  exactly_once_in_order(nic(c), seed(), 400, 2000, nullptr, mbp2());
}
// Frames duplicated and overtaken on the path (bounded to 200 us), with some loss: the
// receiver drops what is behind it, asks for what is missing, and delivers each once in order.
TEST_P(GoBackNSeeded, DuplicationAndReorderingAreAbsorbed) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  c.ether.duplicate = 0.05;
  c.ether.reorder = 0.05;
  c.ether.reorder_max_ns = 200000;
  c.ether.loss = 0.01;
  c.ack_timeout_us = 2000;
  exactly_once_in_order(nic(c), seed(), 400, 2000, nullptr, mbp2());
}
// Blackhole periods: each station is cut off for 2.5 ms at a time (longer than the 2 ms ack
// timeout, so a timer can fire into the hole and back off), 1.5 ms apart on average, on top
// of light loss: every packet arrives once and in order, and the window drains.
TEST_P(GoBackNSeeded, BlackholePeriodsAreRiddenOut) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  c.ether.blackhole_every_us = 1500;
  c.ether.blackhole_us = 2500;
  c.ether.loss = 0.01;
  c.ack_timeout_us = 2000;
  exactly_once_in_order(nic(c), seed(), 800, 8000, [](Rig& r) {
    const auto st = r.stats.dump();
    EXPECT_GT(st["system"]["ether"]["injected_blackhole_losses"].get<uint64_t>(), 10u);
  }, mbp2());
}
INSTANTIATE_TEST_SUITE_P(Seeds, GoBackNSeeded, ::testing::ValuesIn(nic_seeds(5)), nic_seed_name);

// Long loss bursts (20 frames on average) swallow data and acknowledgements alike while the
// sender keeps filling its window to TH2 = 127, the most an 8-bit sequence number allows:
// every packet still arrives once and in order, and no more than TH2 are ever outstanding.
TEST(GoBackN, BlackoutOfAcknowledgementsKeepsTheWindow) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  c.ether.burst_enter = 0.01;
  c.ether.burst_leave = 0.05;
  c.th2 = 127;
  c.ack_timeout_us = 2000;
  // A burst outlasts mbcf.max_timeouts timeouts now and then: probes back off to 1 s.
  EXPECT_GT(exactly_once_in_order(c, 11, 800, 120000), 64u);  // the window really was used
}

TEST(GoBackN, TenMegabitHubWithLoss) {
  EtherSysConfig c;
  c.ether.rate_mbps = 10;
  c.ether.loss = 0.02;
  exactly_once_in_order(c, 9, 200);
}


// Sends `n` WRITEs of `bytes` from node 0 to node 1 as fast as the system call allows; the
// last asks for a status reply, whose RECV_P collects the tail (buffers below TH1 are otherwise
// collected only by the timeout's handshaked resend).
void blast(Rig& r, uint32_t n, uint32_t bytes) {
  auto sent = std::make_shared<uint32_t>(0);
  auto next = std::make_shared<std::function<void()>>();
  *next = [&r, n, bytes, sent, next] {
    if (*sent == n) {
      *next = nullptr;  // the function held itself: break the cycle when done (LeakSanitizer)
      return;
    }
    Command c;
    c.cmd = Cmd::Write;
    c.laddr = 0x10100;
    c.length = bytes;
    c.data.assign(bytes, static_cast<uint8_t>(++*sent));
    if (*sent == n) {
      c.opt.reply = ReplyMode::Status;
      c.status_laddr = 0x10000;
    }
    ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {c}}, *next));
  };
  (*next)();
}

// 64 frames of 1 KiB wait 56 ms in a 10 Mb/s transmit queue: a timer started at the request
// (rather than when a frame has left the MAC) would fire with nothing lost.
TEST(GoBackN, TimerRunsFromTheWireNotFromTheRequest) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  c.ether.rate_mbps = 10;
  Rig r(c);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  blast(r, 200, 1024);
  for (int i = 0; i < 100 && (i < 1 || !r.sys->quiet()); ++i) r.run(10);
  EXPECT_TRUE(r.sys->quiet()) << r.sys->dump();
  EXPECT_EQ(mbcf_stat(r, "timeouts"), 0u);
  EXPECT_EQ(mbcf_stat(r, "retransmissions"), 0u);
  EXPECT_LE(mbcf_stat(r, "ack_polls"), 1u);  // the last status reply's buffer, at most
  EXPECT_EQ(r.word(1, 0x10100) & 0xff, 200u);
}

// A loss is repaired by resending, handshaked, only what was on the wire when it was detected
// (6.1.4); the packets requested meanwhile then go out normally, not one round trip each.
TEST(GoBackN, HandshakedResendCoversOnlyTheLostPackets) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  Rig r(c);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  blast(r, 600, 256);
  r.run(1);  // about 30 frames in
  r.sys->ether().set_deaf(1, true);
  r.run(0.1);  // a few frames lost
  r.sys->ether().set_deaf(1, false);
  for (int i = 0; i < 100 && !r.sys->quiet(); ++i) r.run(5);
  EXPECT_TRUE(r.sys->quiet()) << r.sys->dump();
  EXPECT_GE(mbcf_stat(r, "resend_requests"), 1u);
  EXPECT_GE(mbcf_stat(r, "retransmissions"), 1u);
  // Resent: the frames lost plus what followed them before the request came back, at most
  // TH2; never the rest of the run.
  EXPECT_LE(mbcf_stat(r, "retransmissions"), c.th2);
  EXPECT_EQ(r.word(1, 0x10100) & 0xff, 600u & 0xff);
}

// The ack request rides on a packet whose command replies: the reply carries RECV_P, so the
// target sends no separate acknowledgement frame.
TEST(GoBackN, AReplyAnswersTheAckRequest) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  c.th1 = 4;
  Rig r(c);
  uint32_t acks_from_target = 0, ack_requests = 0;
  r.sys->set_tx_hook([&](uint32_t from, uint32_t, const Packet& p) {
    if (from == 1 && (p.ctrl_p & kAckOnly) && !(p.ctrl_p & kAckReq)) ++acks_from_target;  // not its own tail poll
    if (from == 0 && (p.ctrl_p & kAckReq)) ++ack_requests;
  });
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  uint32_t done = 0;
  std::function<void()> next = [&] {
    if (done == 40) return;
    ++done;
    ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_word(0x10100, done, ReplyMode::Status)}}, next));
  };
  next();
  for (int i = 0; i < 20 && (i < 1 || !r.sys->quiet()); ++i) r.run(5);
  EXPECT_TRUE(r.sys->quiet()) << r.sys->dump();
  EXPECT_GE(ack_requests, 1u);
  EXPECT_EQ(acks_from_target, 0u);
  EXPECT_EQ(r.word(1, 0x10100), 40u);
}

TEST(GoBackN, PeerRestartResetsSequenceNumbers) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  c.ack_timeout_us = 1000;
  c.max_timeouts = 4;
  Rig r(c);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  r.sys->power_off(1);
  std::function<void(int)> send = [&](int i) {
    if (i < 5) r.sys->syscall(0, 1, Request{1, {write_word(0x10100 + 4 * i, 7)}}, [&, i] { send(i + 1); });
  };
  send(0);
  r.run(20);
  // Silent for max_timeouts: probed with back-off, every packet kept (it may only be cut off).
  EXPECT_EQ(r.sys->unacked(0, 1), 5u);
  EXPECT_EQ(mbcf_stat(r, "peers_unresponsive"), 1u);
  const uint64_t probes = mbcf_stat(r, "timeouts") + mbcf_stat(r, "ack_polls");
  r.run(60);  // back-off: 1, 2, 4, 8, 16, 32 ms after the fourth timeout, so few probes more
  EXPECT_LE(mbcf_stat(r, "timeouts") + mbcf_stat(r, "ack_polls"), probes + 6);
  r.sys->power_on(1);
  r.run(1);
  // Its Hello says it restarted: what it never acknowledged is abandoned, and counted.
  EXPECT_EQ(r.sys->unacked(0, 1), 0u);
  EXPECT_EQ(mbcf_stat(r, "packets_abandoned"), 5u);
  bool done = false;
  r.sys->syscall(0, 1, Request{1, {write_word(0x10200, 42, ReplyMode::Status)}}, [] {});
  r.sys->poll(0, [&] { return r.word(0, 0x10000) != 0; }, [&] { done = true; });
  r.run(5);
  EXPECT_TRUE(done);
  EXPECT_EQ(r.word(1, 0x10200), 42u);
  EXPECT_EQ(r.word(1, 0x10100), 0u);  // what was sent while it was down is gone, not replayed
}

// The network stuck check: a peer powered off for good leaves packets unacknowledged with no
// progress; after mbcf.stuck_us the system says so (a run then stops with exit status 2), and
// the protocol itself goes on probing as before (the check only reports).
// Several calls of one node wait for room to the same peer (the user's and, say, a signal-
// invoked program's). When room comes they go out in order, and never more than the window:
// a released call still pays for its system call before its packet is numbered, and the
// window counts it meanwhile.
TEST(GoBackN, CallsReleasedTogetherNeverOverfillTheWindow) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  c.th1 = 2;
  c.th2 = 2;
  Rig r(c);
  size_t most = 0;
  r.sys->set_tx_hook([&](uint32_t from, uint32_t to, const Packet&) {
    if (from == 0 && to == 1) most = std::max<size_t>(most, r.sys->unacked(0, 1));
  });
  std::vector<uint32_t> order;
  record_writes(r, order);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  r.sys->power_off(1);  // nothing is acknowledged: the window fills
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_word(0x10100, 1)}}, [] {}));
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_word(0x10104, 2)}}, [] {}));
  r.run(1);
  ASSERT_EQ(r.sys->unacked(0, 1), 2u);
  for (uint32_t i = 0; i < 4; ++i)  // four calls wait, from four contexts
    ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_word(0x10200 + 4 * i, 10 + i)}}, [] {}));
  r.run(1);
  r.sys->power_on(1);  // its Hello resets the pair: the four go into a fresh window of 2
  r.run(200);
  EXPECT_LE(most, c.th2) << "more packets outstanding than TH2";
  expect_writes_in_order(r, order, 0x10200, 10, 4);  // the two sent to the dead node are abandoned
  EXPECT_TRUE(r.sys->quiet()) << r.sys->dump();
}

TEST(GoBackN, APeerThatNeverComesBackIsReportedAsStuck) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  c.ack_timeout_us = 1000;
  c.max_timeouts = 4;
  c.max_backoff_us = 8000;
  c.stuck_us = 50000;
  Rig r(c);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  r.sys->power_off(1);
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_word(0x10100, 7)}}, [] {}));
  r.run(40);
  EXPECT_TRUE(r.sys->failure().empty()) << r.sys->failure();
  r.run(30);
  EXPECT_NE(r.sys->failure().find("network stuck: node 0 -> 1 has 1 packets unacknowledged and no acknowledgement progress"), std::string::npos)
      << r.sys->failure();
  const uint64_t probes = mbcf_stat(r, "timeouts") + mbcf_stat(r, "ack_polls");
  r.run(50);
  EXPECT_GT(mbcf_stat(r, "timeouts") + mbcf_stat(r, "ack_polls"), probes) << "the check must not stop the protocol";
  EXPECT_NE(r.sys->dump().find("END_P 1: task 1 -> task 1, MBCF_WRITE, no progress for"), std::string::npos) << r.sys->dump();
  // It comes back: the pair recovers (the report stays: the run would have stopped).
  r.sys->power_on(1);
  r.run(20);
  EXPECT_EQ(r.sys->unacked(0, 1), 0u);
}

// A restart on a lossy link: the Hello (and its answer) may be lost, so it is repeated until
// answered (it used to be sent once, and a lost one left the pair out of step for good); then
// both directions deliver every write once, in order (each word ends at its last value).
class RestartSeeded : public ::testing::TestWithParam<uint64_t> {};
TEST_P(RestartSeeded, HelloIsRepeatedUntilAnsweredOnALossyLink) {
  const uint64_t seed = GetParam();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  c.ether.loss = 0.3;
  c.ack_timeout_us = 1000;
  Rig r(c, seed);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  r.sys->power_off(1);
  r.run(1);
  r.sys->power_on(1);
  r.run(50);  // the Hello exchange (what is sent before it ends may be abandoned: at most once)
  const uint64_t hellos = mbcf_stat(r, "hellos");
  int done = 0;
  std::function<void(uint32_t, uint32_t, int)> send = [&](uint32_t from, uint32_t to, int i) {
    if (i == 30) {
      ++done;
      return;
    }
    ASSERT_TRUE(r.sys->syscall(from, 1, Request{to, {write_word(0x10100 + 4 * (i % 4), 100 + i)}},
                               [&, from, to, i] { send(from, to, i + 1); }));
  };
  send(1, 0, 0);
  send(0, 1, 0);
  for (int i = 0; i < 2000 && !(done == 2 && r.sys->quiet()); ++i) r.run(5);
  ASSERT_EQ(done, 2) << "seed " << seed << "\n" << r.sys->dump();
  EXPECT_TRUE(r.sys->quiet()) << r.sys->dump();
  for (uint32_t n : {0u, 1u})
    for (int w = 0; w < 4; ++w) {
      const int last = 28 + w < 30 ? 28 + w : 24 + w;  // the last write to word w
      EXPECT_EQ(r.word(n, 0x10100 + 4 * w), 100u + last) << "node " << n << " seed " << seed;
    }
  std::printf("hellos %llu\n", static_cast<unsigned long long>(hellos));
  if (seed == 1) {
    EXPECT_GE(hellos, 2u);  // this seed loses the first Hello or its answer
  }
}
INSTANTIATE_TEST_SUITE_P(Seeds, RestartSeeded, ::testing::Values(1, 2, 3, 4, 5, 6));

// Node 0 streams 400 tagged FIFO entries to node 1 over a switch that loses, duplicates and
// reorders frames; the test crashes one of the two at a seeded moment for a seeded time.
struct CrashStream {
  static constexpr uint32_t n = 400;
  static EtherSysConfig config(uint32_t max_timeouts, double reorder_max_ns) {
    EtherSysConfig c;
    c.ether.medium = net::EtherConfig::Medium::Switch;
    c.ether.loss = 0.05;
    c.ether.duplicate = 0.05;
    c.ether.reorder = 0.05;
    c.ether.reorder_max_ns = reorder_max_ns;
    c.ack_timeout_us = 1000;
    c.max_timeouts = max_timeouts;
    return c;
  }
  CrashStream(NicSeed p, uint32_t max_timeouts, double reorder_max_ns = 100000)
      : seed(p.seed), r(with_nic(config(max_timeouts, reorder_max_ns), p), p.seed, p.mbp2) {
    std::printf("seed %llu%s\n", static_cast<unsigned long long>(seed), p.mbp2 ? " (MBP2 NICs)" : p.streams ? " (streaming NICs)" : "");
    init_fifo(r.sys->space(1), r.task(1), 0x10100, 0x11000, 0x8000);
    r.sys->set_accept_hook([this](uint32_t from, uint32_t to, const Packet& p) {
      if (from == 0 && to == 1 && !p.cmds.empty() && p.cmds[0].cmd == Cmd::Fifo) got.push_back(static_cast<uint32_t>(load_le(p.cmds[0].data.data(), 4)));
    });
    Rng rng(seed, "crash");
    crash_ps = (2 + rng.below(9)) * 1'000'000'000ull;
    down_ps = (1 + rng.below(30)) * 1'000'000'000ull;
  }
  // The sender's next entry; a system call refused (on a node without power) is counted.
  void next() {
    if (sent == n) return;
    if (r.sys->syscall(0, 1, Request{1, {word_command(Cmd::Fifo, 0x10100, sent)}}, [this] { next(); })) ++sent;
    else ++refused;
  }
  // Node 1 drains its FIFO now and then so it never fills.
  void drain() {
    while (fifo_pop(r.sys->space(1), r.task(1), 0x10100)) {
    }
    r.cal.after(200'000'000, [this] { drain(); });
  }
  // Node 1 loses its power at crash_ps and comes back down_ps later, a new incarnation.
  void crash_receiver() {
    r.cal.after(crash_ps, [this] {
      sent_at_crash = sent;
      r.sys->power_off(1);
      r.cal.after(down_ps, [this] { r.sys->power_on(1); });
    });
  }
  void run() {
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
    next();
    drain();
    for (int i = 0; i < 2000 && !(sent == n && r.sys->quiet()); ++i) r.run(5);
  }
  // At-most-once: everything sent, the window drained, the crash in the middle of the stream;
  // what arrives strictly increasing (nothing twice, order kept, no frame of an old incarnation
  // taken by a new one), one range lost at most, the start and the end of the stream arrived.
  void expect_at_most_once() {
    ASSERT_EQ(sent, n) << "seed " << seed << "\n" << r.sys->dump();
    EXPECT_TRUE(r.sys->quiet()) << "seed " << seed << "\n" << r.sys->dump();
    EXPECT_EQ(r.sys->unacked(0, 1), 0u);
    EXPECT_GT(sent_at_crash, 0u);
    EXPECT_LT(sent_at_crash, n) << "the crash must fall in the middle of the stream";
    ASSERT_FALSE(got.empty());
    uint32_t gaps = 0;
    for (size_t i = 1; i < got.size(); ++i) {
      ASSERT_GT(got[i], got[i - 1]) << "delivered twice or out of order, seed " << seed;
      gaps += got[i] != got[i - 1] + 1;
    }
    EXPECT_EQ(got.front(), 0u) << "seed " << seed;
    EXPECT_EQ(got.back(), n - 1) << "the end of the stream must arrive, seed " << seed;
    std::string ranges;
    for (size_t i = 0; i < got.size(); ++i)
      if (i == 0 || got[i] != got[i - 1] + 1) ranges += (i ? "-" + std::to_string(got[i - 1]) + " " : "") + std::to_string(got[i]);
    ranges += "-" + std::to_string(got.back());
    EXPECT_LE(gaps, 1u) << "more than one range lost, seed " << seed << ": delivered " << ranges;
  }
  uint64_t seed;
  Rig r;
  std::vector<uint32_t> got;
  uint32_t sent = 0, refused = 0, sent_at_crash = 0;
  uint64_t crash_ps = 0, down_ps = 0;
};

// The receiver crashes in the middle of the stream and comes back as a new incarnation. What
// is lost is the packets in flight or sent while it was down, which the sender abandons and
// counts when the restart's Hello tells it.
class CrashSeeded : public ::testing::TestWithParam<NicSeed> {};
TEST_P(CrashSeeded, AReceiverCrashMidStreamLosesOneRangeAndDeliversNothingTwice) {
  CrashStream s(GetParam(), 4);
  s.crash_receiver();
  s.run();
  s.expect_at_most_once();
  EXPECT_EQ(s.refused, 0u);
  const uint64_t abandoned = mbcf_stat(s.r, "packets_abandoned");
  EXPECT_GE(abandoned, CrashStream::n - s.got.size()) << "a lost packet that was not counted as abandoned, seed " << s.seed;
  EXPECT_GE(mbcf_stat(s.r, "hellos"), 1u);
  std::printf("crash at %llu ms for %llu ms: %zu of %u delivered, %llu abandoned\n", static_cast<unsigned long long>(s.crash_ps / 1'000'000'000ull),
              static_cast<unsigned long long>(s.down_ps / 1'000'000'000ull), s.got.size(), CrashStream::n, static_cast<unsigned long long>(abandoned));
}

// The sender crashes instead: its program dies with it (a computation or poll in progress
// never continues, a system call on the dead node is refused), and a new program, started
// after the power comes back, goes on numbering from where the old one had got to. The
// receiver must take the new incarnation's packets (their sequence numbers start again)
// without taking any twice.
TEST_P(CrashSeeded, ASenderCrashMidStreamLosesOneRangeAndDeliversNothingTwice) {
  CrashStream s(GetParam(), EtherSysConfig{}.max_timeouts);
  uint32_t refused_while_down = 0;
  s.r.cal.after(s.crash_ps, [&] {
    s.sent_at_crash = s.sent;
    s.r.sys->power_off(0);
    s.next();  // the dead node refuses what its program can no longer do
    refused_while_down = s.refused;
    s.r.cal.after(s.down_ps, [&] {
      s.r.sys->power_on(0);
      s.r.cal.after(5'000'000'000ull, [&] { s.next(); });  // a new program, once the Hello is through
    });
  });
  s.run();
  EXPECT_EQ(refused_while_down, 1u);
  s.expect_at_most_once();
  std::printf("sender crash at %llu ms for %llu ms: %zu of %u delivered\n", static_cast<unsigned long long>(s.crash_ps / 1'000'000'000ull),
              static_cast<unsigned long long>(s.down_ps / 1'000'000'000ull), s.got.size(), CrashStream::n);
}

// Frames the path holds back (the reordering fault) for longer than the receiver is down reach
// its new incarnation after the Hello exchange: a resend the sender built before it learnt of
// the restart, an early frame overtaken by later ones. The sender's numbering goes on across
// the restart and the HelloAck says from where, so the restarted node takes them as
// duplicates. (When the numbering started again at 1, such a frame carried a number the new
// window was about to use, and a lost new packet let it in: seed mbp2_2 of the test above,
// once the PME collected its rings' completions in one interrupt, delivered entry 3 after 69.)
TEST_P(CrashSeeded, FramesHeldBackBeyondAReceiverRestartAreNotTakenAsNewOnes) {
  CrashStream s(GetParam(), 4, 3'000'000);  // held back up to 3 ms
  s.down_ps = 1'000'000'000ull;              // down for 1 ms
  s.crash_receiver();
  s.run();
  s.expect_at_most_once();
  EXPECT_GE(mbcf_stat(s.r, "hellos"), 1u);
}
INSTANTIATE_TEST_SUITE_P(Seeds, CrashSeeded, ::testing::ValuesIn(nic_seeds(8)), nic_seed_name);

// The same, directed (the seeded streams above meet it only when the faults happen to line
// up): a frame of the old window that the path held back reaches the receiver's new
// incarnation after the Hello exchange. The sender's numbering went on across the restart, so
// the frame's number is behind the new window and it is dropped as a duplicate; were both ends
// to number afresh from 1 (mutant hello_restarts_numbering), the old frame numbered 1 would
// pass for the new window's first packet.
TEST(MbcfEther, AnOldWindowsFrameReachingARestartedReceiverIsADuplicate) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  Rig r(c);
  init_fifo(r.sys->space(1), r.task(1), 0x10100, 0x11000, 0x8000);
  std::vector<uint32_t> got;
  r.sys->set_accept_hook([&got](uint32_t from, uint32_t to, const Packet& p) {
    if (from == 0 && to == 1 && !p.cmds.empty() && p.cmds[0].cmd == Cmd::Fifo) got.push_back(static_cast<uint32_t>(load_le(p.cmds[0].data.data(), 4)));
  });
  auto fifo = [](uint32_t v) { return word_command(Cmd::Fifo, 0x10100, v); };
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  for (uint32_t v = 0; v < 10; ++v) {
    ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {fifo(v)}}, [] {}));
    r.run(1);
  }
  ASSERT_EQ(got.size(), 10u);
  r.sys->power_off(1);
  r.run(1);
  r.sys->power_on(1);  // Hello to node 0, HelloAck back
  r.run(5);
  EXPECT_GE(mbcf_stat(r, "hellos"), 1u);
  // The old window's first frame, as the path held it back.
  Packet old = r.hand_built(0, 1, {fifo(999)});
  old.ctrl_p = kSequenced;
  old.end_p = 1;
  old.recv_p = 0;
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(encode(old, bytes));
  const uint64_t dups = mbcf_stat(r, "duplicates");
  r.sys->ether().send(0, 1, bytes, nullptr);
  r.run(2);
  EXPECT_EQ(mbcf_stat(r, "duplicates"), dups + 1);
  // The new window's first packet is taken, and only it.
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {fifo(10)}}, [] {}));
  r.run(5);
  std::vector<uint32_t> want(11);
  for (uint32_t v = 0; v < 11; ++v) want[v] = v;
  EXPECT_EQ(got, want);
}

TEST(MbcfEther, UpdateMulticastsAlongThePatternAndCombinesAcks) {
  EtherSysConfig c;
  c.nodes = 5;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  Rig r(c);
  // Pattern: root page on node 0 -> nodes 1, 2; node 1 -> nodes 3, 4. Node 4's page is in a
  // different place in its task.
  auto page = [&](uint32_t n, uint32_t laddr) -> Pte& { return r.task(n).pages.at(laddr / c.page_bytes); };
  for (uint32_t n = 0; n < 5; ++n) page(n, n == 4 ? 0x14000 : 0x12000).in_pattern = true;
  page(0, 0x12000).children = {{1, 1, 1001, 0x12000}, {2, 1, 1002, 0x12000}};
  page(1, 0x12000).children = {{3, 1, 1003, 0x12000}, {4, 1, 1004, 0x14000}};
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  Command u;
  u.cmd = Cmd::Update;
  u.laddr = 0x12010;
  u.length = 4;
  u.data = {9, 0, 0, 0};
  u.opt.reply = ReplyMode::Status;
  u.status_laddr = 0x10000;
  r.sys->syscall(2, 1, Request{0, {u}}, [] {});
  r.run(5);
  EXPECT_EQ(r.word(2, 0x10000), static_cast<uint32_t>(Status::Succeeded));  // one combined status
  for (uint32_t n = 0; n < 4; ++n) EXPECT_EQ(r.word(n, 0x12010), 9u) << n;
  EXPECT_EQ(r.word(4, 0x14010), 9u);
  EXPECT_EQ(r.word(4, 0x12010), 0u);  // only the pages of the pattern
  EXPECT_EQ(r.stats.dump()["system"]["mbcf"]["multicast_forwards"], 4);
  // INVALIDATE clears the copies' validity along the same pattern.
  Command inv;
  inv.cmd = Cmd::Invalidate;
  inv.laddr = 0x12000;
  r.sys->syscall(2, 1, Request{0, {inv}}, [] {});
  r.run(5);
  for (uint32_t n = 0; n < 5; ++n) EXPECT_FALSE(page(n, n == 4 ? 0x14000 : 0x12000).valid) << n;
}

// Found by the MBCF random tester: a request a task sends to its own node skips the wire, and
// what its execution sent back (the status reply, the copies of a multicast) stayed queued
// until some other packet arrived on some node; on a quiet system, never.
TEST(MbcfEther, ARequestToItsOwnNodeIsAnsweredAndItsMulticastCompletes) {
  EtherSysConfig c;
  c.nodes = 3;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  Rig r(c);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  ASSERT_TRUE(r.sys->syscall(2, 1, Request{2, {write_word(0x12000, 7, ReplyMode::Status)}}, [] {}));
  r.run(5);
  EXPECT_EQ(r.word(2, 0x12000), 7u);
  EXPECT_EQ(r.word(2, 0x10000), static_cast<uint32_t>(Status::Succeeded));
  // Node 2's page is the root of a pattern over all three nodes; node 2 updates it.
  auto page = [&](uint32_t n) -> Pte& { return r.task(n).pages.at(0x13000 / c.page_bytes); };
  for (uint32_t n = 0; n < 3; ++n) page(n).in_pattern = true;
  page(2).children = {{0, 1, 1000, 0x13000}, {1, 1, 1001, 0x13000}};
  Command u = write_word(0x13008, 0x55, ReplyMode::Status);
  u.cmd = Cmd::Update;
  r.sys->space(2).store32(r.task(2), 0x10000, 0);
  ASSERT_TRUE(r.sys->syscall(2, 1, Request{2, {u}}, [] {}));
  r.run(5);
  for (uint32_t n = 0; n < 3; ++n) EXPECT_EQ(r.word(n, 0x13008), 0x55u) << n;
  EXPECT_EQ(r.word(2, 0x10000), static_cast<uint32_t>(Status::Succeeded));
  r.run(100);
  EXPECT_TRUE(r.sys->quiet()) << r.sys->dump();
}

// Found by the MBCF random tester: a program invoked by MBCF_SIGNAL while the node's user code
// was computing was an internal error ("the user program is already busy"). It runs on top of
// the interrupted code, which resumes afterwards with the time it still needed; a second
// invocation under EVERY_TIME_NONBLK nests the same way.
TEST(MbcfEther, ASignalledProgramPreemptsTheRunningUserCodeWhichThenResumes) {
  EtherSysConfig c;
  c.nodes = 2;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  Rig r(c);
  const uint32_t S = 0x11000, F = 0x11040;
  init_fifo(r.sys->space(1), r.task(1), F, 0x12000, 256);
  init_signal(r.sys->space(1), r.task(1), S, SigInvoke::DspInvoke, SigStore::Nonw, SigCond::EveryTimeNonblk, 0x6000, 0, 0, F);
  constexpr uint64_t kMainPs = 2'000'000'000, kProgPs = 300'000'000;  // 2 ms of user code; 300 us per program
  uint32_t ran = 0;
  r.sys->set_program(1, 1, 0x6000, [&](const Invocation&, std::function<void()> done) {
    ++ran;
    r.sys->compute(1, kProgPs, done);
  });
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  uint64_t main_end = 0;
  r.sys->compute(1, kMainPs, [&] { main_end = r.cal.now_ps(); });
  Command s;
  s.cmd = Cmd::Signal;
  s.laddr = S;
  s.length = 4;
  s.data = {1, 2, 3, 4};
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {s, s}}, [] {}));  // two invocations, the second nests
  r.run(10);
  EXPECT_EQ(ran, 2u);
  EXPECT_GT(main_end, kMainPs + 2 * kProgPs) << "the user code was not held while the programs ran";
  EXPECT_LT(main_end, kMainPs + 2 * kProgPs + 200'000'000) << "the user code waited for more than the programs and their dispatch";
  EXPECT_EQ(r.sys->space(1).load32(r.task(1), S + 12), 0u);  // both returned
}

TEST(MbcfEther, PageFaultSavesAndReplaysInOrder) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  c.page_in_us = 500;
  Rig r(c);
  r.sys->swap_out(1, 1, 0x11000);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  // The first write faults; the next two (to a present page, and the faulting page) wait behind it.
  r.sys->syscall(0, 1, Request{1, {write_word(0x11000, 1)}}, [&] {
    r.sys->syscall(0, 1, Request{1, {write_word(0x10100, 2)}}, [&] {
      r.sys->syscall(0, 1, Request{1, {write_word(0x11000, 3)}}, [] {});
    });
  });
  r.run(0.3);
  EXPECT_EQ(r.word(1, 0x10100), 0u);  // held in order behind the fault
  r.run(2);
  EXPECT_EQ(r.word(1, 0x10100), 2u);
  EXPECT_EQ(r.word(1, 0x11000), 3u);  // the later write to the page wins: order kept
  EXPECT_EQ(r.stats.dump()["system"]["mbcf"]["page_faults"], 1);
}

// The save area of 3.4.2 is finite (mbcf.save_area): while the task waits for its page,
// packets beyond the area are not accepted, and Go-back-N brings them again after the
// page-in. Every write lands once and in order, and the area never holds more than it may
// (the bound is checked online: a breach stops the run as a failure).
TEST(MbcfEther, AFullSaveAreaRefusesPacketsWhichComeAgainInOrder) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  c.page_in_us = 2000;
  c.save_area = 8;
  Rig r(c);
  r.sys->swap_out(1, 1, 0x11000);
  std::vector<uint32_t> order;
  record_writes(r, order);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  constexpr uint32_t kWrites = 60;
  uint32_t sent = 0;
  std::function<void()> next = [&] {
    if (sent == kWrites) return;
    const uint32_t i = sent++;
    ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {write_word(0x11000 + 4 * i, i + 1)}}, next));
  };
  next();
  for (int i = 0; i < 100 && !(sent == kWrites && r.sys->quiet()); ++i) r.run(5);
  EXPECT_EQ(r.sys->failure(), "") << r.sys->dump();
  expect_writes_in_order(r, order, 0x11000, 1, kWrites);
  EXPECT_GT(mbcf_stat(r, "save_area_full"), 0u) << "the area never filled: the test tests nothing";
  EXPECT_GT(mbcf_stat(r, "retransmissions"), 0u);
  EXPECT_EQ(mbcf_stat(r, "page_faults"), 1u);
  EXPECT_TRUE(r.sys->quiet()) << r.sys->dump();
}

// A task's requests to a task of its own node whose save area is full: the system call waits
// for room (the user with it) and goes on after the page-in; order is kept.
TEST(MbcfEther, ALocalRequestToAFullSaveAreaWaitsForThePageIn) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  c.page_in_us = 2000;
  c.save_area = 4;
  Rig r(c);
  r.sys->swap_out(1, 1, 0x11000);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  constexpr uint32_t kWrites = 20;
  uint32_t sent = 0;
  uint64_t tenth_done_ps = 0;
  std::function<void()> next = [&] {
    if (sent == 10) tenth_done_ps = r.cal.now_ps();
    if (sent == kWrites) return;
    const uint32_t i = sent++;
    ASSERT_TRUE(r.sys->syscall(1, 1, Request{1, {write_word(0x11000 + 4 * i, i + 1)}}, next));
  };
  next();
  r.run(1);
  EXPECT_LT(sent, 10u) << "the user went on while the save area was full";
  r.run(20);
  EXPECT_EQ(r.sys->failure(), "") << r.sys->dump();
  EXPECT_EQ(sent, kWrites);
  EXPECT_GT(tenth_done_ps, 2'000'000'000u) << "a call returned before the page-in made room";
  for (uint32_t i = 0; i < kWrites; ++i) EXPECT_EQ(r.word(1, 0x11000 + 4 * i), i + 1) << "write " << i;
  EXPECT_GT(mbcf_stat(r, "save_area_full"), 0u);
  EXPECT_TRUE(r.sys->quiet());
}

// A call waiting for room in the save area belongs to its program: when the node loses its
// power the call dies with it, and the page-in that comes later does not revive it.
TEST(MbcfEther, ACallWaitingForTheSaveAreaDiesWithThePower) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  c.page_in_us = 2000;
  c.save_area = 2;
  Rig r(c);
  r.sys->swap_out(1, 1, 0x11000);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  uint32_t returned = 0;
  std::function<void()> next = [&] {
    const uint32_t i = returned++;
    r.sys->syscall(1, 1, Request{1, {write_word(0x11000 + 4 * i, i + 1)}}, next);
  };
  next();
  r.run(1);
  const uint32_t before = returned;
  EXPECT_LT(before, 10u) << "the calls never waited for the save area";
  EXPECT_GT(mbcf_stat(r, "save_area_full"), 0u);
  r.sys->power_off(1);
  r.run(10);  // the page-in completes while the node is down
  EXPECT_EQ(returned, before) << "a call of the dead program returned after the page-in";
}

TEST(MbcfEther, MigrationUpdatesTablesAndForwardsInFlightPackets) {
  EtherSysConfig c;
  c.nodes = 3;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  Rig r(c);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  r.sys->space(1).store32(r.task(1), 0x10300, 5);
  // A write with a status is on its way to node 1 when the task moves to node 2.
  r.sys->syscall(0, 1, Request{1, {write_word(0x10200, 77, ReplyMode::Status)}}, [&] { r.sys->migrate(1, 1, 2, 9); });
  r.run(5);
  Task* moved = r.sys->space(2).find(9);
  ASSERT_NE(moved, nullptr);
  EXPECT_EQ(r.sys->space(2).load32(*moved, 0x10200), 77u);  // forwarded, executed at the new home
  EXPECT_EQ(r.sys->space(2).load32(*moved, 0x10300), 5u);   // its memory came along
  EXPECT_EQ(r.word(0, 0x10000), static_cast<uint32_t>(Status::Succeeded));  // reply reached the requester
  EXPECT_EQ(r.task(0).ltt.at(1).pnode, 2u);  // every table now points at the new place
  EXPECT_EQ(r.task(0).ltt.at(1).ptask, 9u);
  r.sys->space(0).store32(r.task(0), 0x10000, 0);
  r.sys->syscall(0, 1, Request{1, {write_word(0x10204, 78, ReplyMode::Status)}}, [] {});
  r.run(5);
  EXPECT_EQ(r.sys->space(2).load32(*moved, 0x10204), 78u);
}

TEST(MbcfEther, ForgedKeyGetsAViolationAndChangesNothing) {
  EtherSysConfig c;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  Rig r(c);
  r.task(0).ltt[1].key = 0xBAD;
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  r.sys->syscall(0, 1, Request{1, {write_word(0x10200, 66, ReplyMode::Status)}}, [] {});
  r.run(5);
  EXPECT_EQ(r.word(1, 0x10200), 0u);
  EXPECT_EQ(r.word(0, 0x10000), static_cast<uint32_t>(Status::Violation));
  EXPECT_EQ(r.stats.dump()["system"]["mbcf"]["violations"], 1);
}

// A third station puts broken MBCF frames (with a correct FCS) on the wire: the target's
// interrupt routine counts and drops each, changes nothing, and keeps serving valid traffic.
TEST(MbcfEther, MalformedFramesFromTheWireAreCountedAndChangeNothing) {
  EtherSysConfig c;
  c.nodes = 3;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  Rig r(c);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  Command w;
  w.cmd = Cmd::Write;
  w.laddr = 0x10200;
  w.length = 64;
  w.data.assign(64, 0xEE);
  Packet p = r.hand_built(2, 1, {w});
  p.ctrl_p = kNoFlow;
  std::vector<uint8_t> good;
  ASSERT_TRUE(encode(p, good));
  ASSERT_EQ(good.size(), 116u);
  std::vector<std::vector<uint8_t>> bad;
  bad.push_back(std::vector<uint8_t>(good.begin(), good.begin() + 90));  // truncated
  bad.push_back(good);
  bad.back()[43] = 99;  // unknown command
  bad.push_back(good);
  bad.back()[15] = static_cast<uint8_t>(bad.back()[15] + 8);  // total length disagrees
  bad.push_back(good);
  bad.back()[12] = 0x08;  // not the MBCF EtherType
  bad.back()[13] = 0x00;
  bad.push_back(good);
  bad.back()[16 + 3] = 1;  // claims to come from the target itself
  for (auto& b : bad) r.sys->ether().send(2, 1, b, nullptr);
  r.run(2);
  EXPECT_EQ(r.stats.dump()["system"]["mbcf"]["malformed"], bad.size());
  for (uint32_t a = 0x10200; a < 0x10240; a += 4) EXPECT_EQ(r.word(1, a), 0u) << std::hex << a;
  // The valid frame itself is accepted, and node 0 still gets through.
  r.sys->ether().send(2, 1, good, nullptr);
  r.sys->syscall(0, 1, Request{1, {write_word(0x10300, 5, ReplyMode::Status)}}, [] {});
  r.run(2);
  EXPECT_EQ(r.word(1, 0x10200), 0xEEEEEEEEu);
  EXPECT_EQ(r.word(1, 0x10300), 5u);
  EXPECT_EQ(r.word(0, 0x10000), static_cast<uint32_t>(Status::Succeeded));
  EXPECT_EQ(r.stats.dump()["system"]["mbcf"]["malformed"], bad.size());
}

// ------------------------------------------------------------ calibration against the thesis

nlohmann::json run_points(const std::string& config, const std::string& sets) {
  const auto r = test::run_config(config, sets);
  EXPECT_EQ(r.status, 0) << r.command << "\n" << r.output;
  return r.summary()["points"];
}

void within(const nlohmann::json& pts, const std::vector<double>& thesis, double tol, const std::string& what) {
  ASSERT_EQ(pts.size(), thesis.size()) << what;
  for (size_t i = 0; i < thesis.size(); ++i) {
    const double v = pts[i]["value"].get<double>();
    EXPECT_LE(std::fabs(v - thesis[i]) / thesis[i], tol) << what << " size " << pts[i]["size"] << ": " << v << " vs " << thesis[i];
  }
}

TEST(Calibration, Table61SendingOverhead) {
  within(run_points("mbcf-ss20-100t-half.json", "--set 'workload.commands=[\"send\"]'"), {5.0, 5.5, 6.0, 8.5, 20.0}, 0.10, "6.1");
}

TEST(Calibration, Table63RoundTrip) {
  within(run_points("mbcf-ss20-100t-half.json", ""),
         {51, 54, 60.5, 88, 200, 51, 54.5, 61, 88, 200.5, 51.5, 58, 71.5, 125.5, 351}, 0.10, "6.3");
}

TEST(Calibration, Table62FullDuplex) {
  within(run_points("mbcf-ss20-100tx.json", ""), {0.34, 1.27, 4.82, 9.63, 11.64, 11.93}, 0.10, "6.2 100BASE-TX");
}

TEST(Calibration, Table610OneWay1000SX) {
  within(run_points("mbcf-ultra60-1000sx.json", ""), {9.6, 11.0, 11.5, 16.2, 35.9}, 0.10, "6.10");
}

// Table 6.2's 100BASE-T hub. Up to 64 bytes the sender's host sets the rate, and the
// transmit-completion routine is calibrated on these points together with the full-duplex
// row's (least squares: the model has no mechanism for the hub row's 9-11% lag there, so it
// sits between the rows). From 256 bytes the wire is the limit: a drift guard (with the
// LANCE-mode gap +1% to +5%; without it -7% to -9%, still inside the bound, so the gap itself
// is checked by the EtherHub unit tests).
TEST(Calibration, Table62HalfDuplexHub) {
  within(run_points("mbcf-ss20-100t-half.json", "--set workload.kind=peak --set 'workload.sizes=[4,16,64,256,1024,1408]' --set workload.transfers=4096"),
         {0.31, 1.15, 4.31, 8.56, 11.13, 11.48}, 0.10, "6.2 100BASE-T hub");
}

// Table 6.9. The burst overhead is the slope from 256 bytes; the descriptor fetch and the
// receive latency are fitted to this row and Table 6.10 together (least squares), which spreads
// the thesis's 2-burst points, 0.35 us above the line through the others, over the row
// (docs/VALIDATION.md): the 64-byte point is the largest error, +8%.
TEST(Calibration, Table69PeakPci) {
  within(run_points("mbcf-ultra60-1000sx.json", "--set workload.kind=peak --set 'workload.sizes=[4,16,64,256,1024,1408]'"),
         {2.29, 5.67, 22.30, 55.41, 78.22, 80.92}, 0.10, "6.9");
}

// The Ultra 60's NIC has one DMA engine for descriptors and data: at 64 bytes, where the
// sender's NIC is the bottleneck, each frame costs its descriptor fetch (nic.tx_latency_ns)
// plus its two 64-byte PCI bursts (39 + 8 cycles each at 66 MHz), and a NIC that prefetched
// the descriptor during the DMA before would go faster.
// (A status check every 512 transfers rather than 16, so that the acknowledgements' own DMA on
// the sender's bus and the round trips they wait on stay out of the figure: with 16 they take
// another 3-4%.)
TEST(MbcfEther, OneDmaEngineFetchesTheNextDescriptorOnlyAfterTheFrameBefore) {
  const std::string sets = "--set workload.kind=peak --set 'workload.sizes=[64]' --set workload.ack_every=512 --set workload.transfers=8192";
  const double one = run_points("mbcf-ultra60-1000sx.json", sets)[0]["value"].get<double>();
  const double pre = run_points("mbcf-ultra60-1000sx.json", sets + " --set nic.tx_prefetch=true")[0]["value"].get<double>();
  const double per_frame_us = 1.13 + 2 * 47 / 66.0;
  EXPECT_NEAR(one, 64 / per_frame_us, 64 / per_frame_us * 0.01);
  EXPECT_GT(pre, one * 1.25);
}

// The 10BASE-T row is the SS20's built-in LANCE, whose small transmit FIFO streams each frame:
// its turnaround between frames (32 us) is fitted to the whole row (least squares). The 4-byte
// point (+8%, printed 0.04 with one significant digit) and the 16-byte one (-5%) disagree in
// the thesis itself, and the fit splits the difference (docs/VALIDATION.md).
TEST(Calibration, Table62TenMegabitHub) {
  within(run_points("mbcf-ss20-10t.json", "--set workload.transfers=2048"), {0.04, 0.17, 0.48, 0.89, 1.13, 1.17}, 0.10, "6.2 10BASE-T hub");
}

// A NIC streaming through a small FIFO takes the next frame only after the one before has left
// the wire, its turnaround later: one frame per frame time plus turnaround (the receiver's
// acknowledgements fall into the turnarounds, so nothing collides); a NIC holding whole frames
// sends back to back (in LANCE mode, so that its stream does not collide with them either).
TEST(MbcfEther, AStreamingNicSendsAFrameOnlyATurnaroundAfterTheOneBefore) {
  const std::string sets = "--set 'workload.sizes=[256]' --set workload.transfers=2048 --set nic.tx_latency_ns=32000";
  const double streams = run_points("mbcf-ss20-10t.json", sets)[0]["value"].get<double>();
  const double whole = run_points("mbcf-ss20-10t.json", sets + " --set nic.tx_streams=false --set ether.lance_mode=true")[0]["value"].get<double>();
  // 256 bytes in a 308-byte frame with its FCS, 8 of preamble: 252.8 us at 10 Mb/s, then 32 us.
  const double per_frame_us = (308 + 8) * 0.8 + 32.0;
  EXPECT_LT(streams, 256 / per_frame_us);
  EXPECT_GT(streams, 256 / per_frame_us * 0.97);  // what the acknowledgements take
  EXPECT_GT(whole, streams * 1.03);
}

TEST(Calibration, Table64OneWayWrite100TX) {
  within(run_points("mbcf-ss20-100t-half.json", "--set workload.kind=oneway --set 'workload.commands=[\"write\"]'"),
         {24.5, 27.5, 34, 60.5, 172}, 0.10, "6.4 MBCF_WRITE");
}

// 6.1.3: user construction builds the body in user space and the kernel still copies the
// packet once, so it costs more than kernel construction, the more the larger the data.
TEST(MbcfEther, UserConstructionCostsMoreThanKernelConstructionGrowingWithSize) {
  const auto k = run_points("mbcf-ss20-100t-half.json", "--set 'workload.commands=[\"send\"]'");
  const auto u = run_points("mbcf-ss20-100t-half.json", "--set 'workload.commands=[\"send\"]' --set mbcf.interface=user");
  ASSERT_EQ(k.size(), u.size());
  double last = 0;
  for (size_t i = 0; i < k.size(); ++i) {
    const double d = u[i]["value"].get<double>() - k[i]["value"].get<double>();
    EXPECT_GT(d, 0) << "size " << k[i]["size"];
    EXPECT_GT(d, last) << "size " << k[i]["size"];
    last = d;
  }
  // And the round trip still works end to end with user-built packets.
  const auto rt = run_points("mbcf-ss20-100t-half.json", "--set mbcf.interface=user");
  const auto rk = run_points("mbcf-ss20-100t-half.json", "");
  for (size_t i = 0; i < rt.size(); ++i) EXPECT_GT(rt[i]["value"].get<double>(), rk[i]["value"].get<double>());
}

TEST(MbcfEther, RaytraceWritesTheWholeFrameAndScales) {
  auto run = [&](int calc) {
    const auto r = test::run_config("mbcf-ss20-100tx.json", "--set workload.kind=raytrace --set mbcf.nodes=" + std::to_string(calc + 1) +
                                                                " --set workload.calc_nodes=" + std::to_string(calc) + " --set workload.payload_bytes=16");
    EXPECT_EQ(r.status, 0) << r.command << "\n" << r.output;
    return r.summary();
  };
  const auto one = run(1), four = run(4);
  EXPECT_TRUE(one["frame_correct"].get<bool>());
  EXPECT_TRUE(four["frame_correct"].get<bool>());
  EXPECT_GT(one["exec_time_s"].get<double>(), 576 * 450 * 70e-6);  // at least the computation
  EXPECT_LT(four["exec_time_s"].get<double>(), one["exec_time_s"].get<double>() / 3);
}

}  // namespace
}  // namespace mbpsim::mbcf

namespace mbpsim::mbcf {
namespace {

// The MBCF random tester's fetch&add check: P user tasks on P nodes each apply k
// MBCF_FETCH_ADD(+1) to one word at node 0, through a lossy hub, one at a time (the status
// reply says when the old value has arrived). The old values must be a permutation of
// 0..Pk-1 and the word must end at Pk: nothing lost, nothing applied twice (a retransmitted
// request is a duplicate and must not be executed again).
class MbcfTester : public ::testing::TestWithParam<uint64_t> {};

void fetch_add_permutation(EtherSysConfig c, uint64_t seed) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  Rig r(c, seed);
  constexpr uint32_t kCounter = 0x10100, kOld = 0x10200, kStatus = 0x10000, kPerNode = 25;
  std::vector<uint32_t> seen;
  std::vector<uint32_t> left(c.nodes, kPerNode);
  std::vector<std::function<void()>> next(c.nodes);
  for (uint32_t n = 1; n < c.nodes; ++n) {
    next[n] = [&, n] {
      if (left[n] == 0) return;
      --left[n];
      r.sys->space(n).store32(r.task(n), kStatus, 0);
      Command f;
      f.cmd = Cmd::FetchAdd;
      f.laddr = kCounter;
      f.length = 4;
      f.data = {1, 0, 0, 0};
      f.data_laddr = kOld;
      f.opt.reply = ReplyMode::Status;
      f.status_laddr = kStatus;
      ASSERT_TRUE(r.sys->syscall(n, 1, Request{0, {f}}, [&, n] {
        r.sys->poll(n, [&, n] { return r.word(n, kStatus) != 0; }, [&, n] {
          EXPECT_EQ(r.word(n, kStatus), static_cast<uint32_t>(Status::Succeeded)) << "seed " << seed;
          seen.push_back(r.word(n, kOld));
          next[n]();
        });
      }));
    };
  }
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  for (uint32_t n = 1; n < c.nodes; ++n) next[n]();
  const uint32_t total = (c.nodes - 1) * kPerNode;
  for (int i = 0; i < 2000 && !(seen.size() == total && r.sys->quiet()); ++i) r.run(5);
  ASSERT_EQ(seen.size(), total) << "seed " << seed << "\n" << r.sys->dump();
  std::sort(seen.begin(), seen.end());
  for (uint32_t i = 0; i < total; ++i) ASSERT_EQ(seen[i], i) << "seed " << seed;
  EXPECT_EQ(r.word(0, kCounter), total) << "seed " << seed;
  const auto st = r.stats.dump()["system"];
  EXPECT_GT(st["mbcf"]["retransmissions"].get<uint64_t>(), 0u);  // loss was repaired
  if (c.ether.duplicate > 0) {  // the faults really happened, and duplicates reached the receiver
    EXPECT_GT(st["ether"]["injected_duplicates"].get<uint64_t>(), 0u);
    EXPECT_GT(st["ether"]["injected_reorders"].get<uint64_t>(), 0u);
    EXPECT_GT(st["mbcf"]["duplicates"].get<uint64_t>(), 0u);
  }
}

TEST_P(MbcfTester, FetchAddFromEveryNodeIsAPermutation) {
  EtherSysConfig c;
  c.nodes = 5;
  c.ether.loss = 0.05;
  c.ack_timeout_us = 2000;
  fetch_add_permutation(c, GetParam());
}

// Duplicated and reordered frames on a switch: a duplicate request must not be executed twice.
TEST_P(MbcfTester, FetchAddSurvivesDuplicationAndReordering) {
  EtherSysConfig c;
  c.nodes = 5;
  c.ether.medium = net::EtherConfig::Medium::Switch;
  c.ether.loss = 0.02;
  c.ether.duplicate = 0.1;
  c.ether.reorder = 0.1;
  c.ether.reorder_max_ns = 200000;
  c.ack_timeout_us = 2000;
  fetch_add_permutation(c, GetParam());
}
// Compare&swap takes a lock word at node 0 (0 -> the taker's id), READ and WRITE increment a
// counter beside it, and SWAP releases the lock (it must find the releaser's id: mutual
// exclusion). Four nodes, ten increments each, through a lossy hub: the counter ends at 40,
// and every acquisition and release was exclusive.
TEST_P(MbcfTester, CompareAndSwapLockProtectsACounter) {
  const uint64_t seed = GetParam();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  EtherSysConfig c;
  c.nodes = 5;
  c.ether.loss = 0.05;
  c.ack_timeout_us = 2000;
  Rig r(c, seed);
  constexpr uint32_t kLock = 0x10100, kCounter = 0x10104, kData = 0x10200, kStatus = 0x10000, kEach = 10;
  // One command with a status reply; `k` gets the status once it has arrived.
  auto call = [&](uint32_t n, Command cmd, std::function<void(Status)> k) {
    r.sys->space(n).store32(r.task(n), kStatus, 0);
    cmd.opt.reply = ReplyMode::Status;
    cmd.status_laddr = kStatus;
    ASSERT_TRUE(r.sys->syscall(n, 1, Request{0, {cmd}}, [&, n, k] {
      r.sys->poll(n, [&, n] { return r.word(n, kStatus) != 0; }, [&, n, k] { k(static_cast<Status>(r.word(n, kStatus))); });
    }));
  };
  auto word_cmd = [](Cmd k, uint32_t laddr, uint32_t v) {
    Command x = word_command(k, laddr, v);
    x.data_laddr = kData;
    return x;
  };
  std::vector<uint32_t> left(c.nodes, kEach);
  uint32_t holders = 0, failed_cas = 0;
  std::vector<std::function<void()>> round(c.nodes);
  for (uint32_t n = 1; n < c.nodes; ++n) {
    round[n] = [&, n] {
      if (left[n] == 0) return;
      Command cas = word_cmd(Cmd::CompSwap, kLock, n);
      cas.flag_laddr = kLock;
      cas.flag_value = 0;
      call(n, cas, [&, n](Status st) {
        if (st == Status::CompareFailed) {
          ++failed_cas;
          round[n]();
          return;
        }
        ASSERT_EQ(st, Status::Succeeded) << "seed " << seed;
        EXPECT_EQ(++holders, 1u) << "two holders, seed " << seed;
        Command rd = word_cmd(Cmd::Read, kCounter, 0);
        rd.data.clear();
        call(n, rd, [&, n](Status) {
          const uint32_t v = r.word(n, kData);
          call(n, word_cmd(Cmd::Write, kCounter, v + 1), [&, n](Status) {
            --holders;
            call(n, word_cmd(Cmd::Swap, kLock, 0), [&, n](Status) {
              EXPECT_EQ(r.word(n, kData), n) << "released a lock it did not hold, seed " << seed;
              --left[n];
              round[n]();
            });
          });
        });
      });
    };
  }
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  for (uint32_t n = 1; n < c.nodes; ++n) round[n]();
  auto done = [&] { return std::all_of(left.begin() + 1, left.end(), [](uint32_t x) { return x == 0; }); };
  for (int i = 0; i < 4000 && !(done() && r.sys->quiet()); ++i) r.run(5);
  ASSERT_TRUE(done()) << "seed " << seed << "\n" << r.sys->dump();
  EXPECT_EQ(r.word(0, kCounter), (c.nodes - 1) * kEach) << "seed " << seed;
  EXPECT_EQ(r.word(0, kLock), 0u);
  EXPECT_GT(failed_cas, 0u);  // the lock really was contended
}
INSTANTIATE_TEST_SUITE_P(Seeds, MbcfTester, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace mbpsim::mbcf
