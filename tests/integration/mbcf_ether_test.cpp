// MBCF/Ether end to end: multicast with acknowledge combining, signals, the page-fault save
// area, task migration, protection, malformed frames, and remote atomics under loss. Go-back-N
// is in mbcf_gbn_test.cpp, the thesis's tables in mbcf_calibration_test.cpp.
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
#include "models/mbp2/mbp2_cards.h"
#include "tests/test_util.h"
#include "tests/integration/mbcf_rig.h"

namespace mbpsim::mbcf {
namespace {

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
  EXPECT_TRUE(r.sys->quiet()) << r.sys->state_dump();
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
  EXPECT_EQ(r.sys->failure(), "") << r.sys->state_dump();
  expect_writes_in_order(r, order, 0x11000, 1, kWrites);
  EXPECT_GT(mbcf_stat(r, "save_area_full"), 0u) << "the area never filled: the test tests nothing";
  EXPECT_GT(mbcf_stat(r, "retransmissions"), 0u);
  EXPECT_EQ(mbcf_stat(r, "page_faults"), 1u);
  EXPECT_TRUE(r.sys->quiet()) << r.sys->state_dump();
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
  EXPECT_EQ(r.sys->failure(), "") << r.sys->state_dump();
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
  ASSERT_EQ(seen.size(), total) << "seed " << seed << "\n" << r.sys->state_dump();
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
  ASSERT_TRUE(done()) << "seed " << seed << "\n" << r.sys->state_dump();
  EXPECT_EQ(r.word(0, kCounter), (c.nodes - 1) * kEach) << "seed " << seed;
  EXPECT_EQ(r.word(0, kLock), 0u);
  EXPECT_GT(failed_cas, 0u);  // the lock really was contended
}
INSTANTIATE_TEST_SUITE_P(Seeds, MbcfTester, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace mbpsim::mbcf

namespace mbpsim::mbcf {
namespace {

// 4.3: a client that does not know a server's access key reaches it with WRITE_TASKQUE, and
// with nothing else. The server takes the entry with the READ_TASKQUE light-weight call (the
// OS's trap and the copy of the entry, cold on the MBP2), learns the client's Pnode, Ptask and
// key from it, and answers with an ordinary MBCF_WRITE. Over the kernel's protocol and over the
// MBP2's PME alike.
void write_taskque_reaches_a_server_whose_key_the_client_does_not_know(bool mbp2) {
  Rig r(EtherSysConfig{}, 1, mbp2);
  Task& server = r.task(1);
  server.has_taskque = true;
  server.taskque_capacity = 4;
  // The client's Ltask 7 names the server, with a key it guessed (the server's is 1001).
  r.task(0).ltt[7] = LtaskEntry{1, 1, 0};
  Command q;
  q.cmd = Cmd::WriteTaskque;
  q.length = 8;
  q.data = {'h', 'e', 'l', 'l', 'o', 0, 0, 1};
  q.opt.reply = ReplyMode::Status;
  q.status_laddr = 0x10000;
  r.sys->space(0).store32(r.task(0), 0x10000, 0);
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{7, {q}}, [] {}));
  r.run(5);
  EXPECT_EQ(r.word(0, 0x10000), static_cast<uint32_t>(Status::Succeeded)) << r.sys->state_dump();
  // Anything else with the wrong key is refused: a WRITE alone, and a WRITE beside a
  // WRITE_TASKQUE (the whole packet: the TASKQUE gets nothing from it).
  const uint64_t before = mbcf_stat(r, "violations");
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{7, {write_word(0x10040, 0xbad)}}, [] {}));
  ASSERT_TRUE(r.sys->syscall(0, 1, Request{7, {q, write_word(0x10044, 0xbad)}}, [] {}));
  r.run(5);
  EXPECT_EQ(r.word(1, 0x10040), 0u);
  EXPECT_EQ(r.word(1, 0x10044), 0u);
  EXPECT_EQ(server.taskque.size(), 1u);
  EXPECT_EQ(mbcf_stat(r, "violations"), before + 2);
  // The server's READ_TASKQUE: the entry, in the user's buffer after the call's trap and copy.
  std::optional<std::vector<uint8_t>> got;
  const uint64_t t0 = r.cal.now_ps();
  uint64_t t1 = 0;
  r.sys->read_taskque(1, 1, [&](std::optional<std::vector<uint8_t>> e) {
    got = std::move(e);
    t1 = r.cal.now_ps();
  });
  r.run(1);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->size(), 12u + 8u);
  EXPECT_EQ(load_le(got->data(), 4), 0u);          // the client's Pnode
  EXPECT_EQ(load_le(got->data() + 4, 4), 1u);      // Ptask
  EXPECT_EQ(load_le(got->data() + 8, 4), 1000u);   // and key
  EXPECT_EQ(std::vector<uint8_t>(got->begin() + 12, got->end()), q.data);
  const host::Os& os = r.sys->os(1);
  // (the kernel's receive routine wrote the entry: in the cache; the MBP2's ADMA wrote it: its
  // one line is touched first, host.cold_line_ns)
  const uint64_t cold = mbp2 ? static_cast<uint64_t>(r.cfg.os.cold_line_ns * 1000) : 0;
  EXPECT_EQ(t1 - t0, r.sys->cycles_ps(r.cfg.os.lw_syscall_cycles) + os.copy_ps(20) + cold);
  EXPECT_EQ(os.spent().lw_syscalls, 1u);
  EXPECT_EQ(os.spent().lw_copy_bytes, 20u);
  EXPECT_TRUE(server.taskque.empty());
  // It answers with what it learned: an ordinary MBCF_WRITE into the client, with its key.
  auto field = [&got](size_t at) { return static_cast<uint32_t>(load_le(got->data() + at, 4)); };
  r.task(1).ltt[9] = LtaskEntry{field(0), field(4), field(8)};
  ASSERT_TRUE(r.sys->syscall(1, 1, Request{9, {write_word(0x10080, 0x600d)}}, [] {}));
  r.run(5);
  EXPECT_EQ(r.word(0, 0x10080), 0x600du);
  // And a READ_TASKQUE of an empty TASKQUE returns nothing and copies nothing.
  bool empty = false;
  r.sys->read_taskque(1, 1, [&](std::optional<std::vector<uint8_t>> e) { empty = !e; });
  r.run(1);
  EXPECT_TRUE(empty);
  EXPECT_EQ(os.spent().lw_copy_bytes, 20u);
}

TEST(MbcfEther, WriteTaskqueReachesAServerWhoseKeyTheClientDoesNotKnow) { write_taskque_reaches_a_server_whose_key_the_client_does_not_know(false); }
TEST(Mbp2, WriteTaskqueReachesAServerWhoseKeyTheClientDoesNotKnow) { write_taskque_reaches_a_server_whose_key_the_client_does_not_know(true); }

}  // namespace
}  // namespace mbpsim::mbcf

namespace mbpsim::mbcf {
namespace {

// 6.1.3's user construction: the user builds the packet's bytes in its own memory and the
// kernel reads, checks and completes them. A well-built image is sent as if the kernel had built
// it; one that sets a field only the kernel fills (a forged source key, Pnode or Ptask, a
// destination key, an Ethernet address, a protocol byte), that does not decode, that holds a
// command only kernels send, or that lies outside the user's readable memory, is refused
// before anything leaves the node.
TEST(MbcfEther, AUserBuiltPacketIsCompletedByTheKernelAndAForgedHeaderFieldIsRefused) {
  Rig r(EtherSysConfig{});
  TaskSpace& ts = r.sys->space(0);
  auto image_of = [](std::vector<Command> cmds) {
    Packet p;
    p.cmds = std::move(cmds);
    std::vector<uint8_t> b;
    EXPECT_TRUE(encode(p, b));
    return b;
  };
  auto send_image = [&](const std::vector<uint8_t>& bytes, uint32_t at = 0x10800) {
    ts.write(r.task(0), at, bytes.data(), static_cast<uint32_t>(bytes.size()));
    Request q;
    q.ltask = 1;
    q.image_laddr = at;
    return r.sys->syscall(0, 1, q, [] {});
  };
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  const std::vector<uint8_t> good = image_of({write_word(0x10100, 0x1234), write_word(0x10104, 0x5678)});
  ASSERT_TRUE(send_image(good));
  r.run(2);
  EXPECT_EQ(r.word(1, 0x10100), 0x1234u);
  EXPECT_EQ(r.word(1, 0x10104), 0x5678u);
  const uint64_t sent = mbcf_stat(r, "packets_sent"), refused = mbcf_stat(r, "requests_refused");
  // Each kernel field forged in turn: byte 0 (destination MAC), 6 (source MAC), 19 (source
  // Pnode), 21 (END_P), 22 (CTRL_P), 27 (source Ptask), 31 (source key), 35 (destination
  // Ptask), 39 (destination key).
  uint32_t forged = 0;
  for (uint32_t at : {0u, 6u, 19u, 21u, 22u, 27u, 31u, 35u, 39u}) {
    std::vector<uint8_t> f = good;
    f[at] = 0x5a;
    EXPECT_FALSE(send_image(f)) << "a user image with byte " << at << " set was taken";
    ++forged;
  }
  // Bytes that do not decode: a total length past the image, an unknown command.
  std::vector<uint8_t> bad = good;
  bad[40 + 3] = 0x7f;  // the first command word's code
  EXPECT_FALSE(send_image(bad));
  // A command only kernels send (a REPLY), built by the user.
  Command reply;
  reply.cmd = Cmd::Reply;
  reply.status_laddr = 0x10000;
  EXPECT_FALSE(send_image(image_of({reply})));
  // An image the user cannot read: one running past its pages (the header is there), and one
  // where it has no page at all.
  {
    const uint32_t at = 0x10000 + 16 * 4096 - kHeaderBytes;
    ts.write(r.task(0), at, good.data(), kHeaderBytes);
    Request q;
    q.ltask = 1;
    q.image_laddr = at;
    EXPECT_FALSE(r.sys->syscall(0, 1, q, [] {}));
    q.image_laddr = 0x900000;
    EXPECT_FALSE(r.sys->syscall(0, 1, q, [] {}));
  }
  // Commands beside an image: refused (the image is the request).
  Request both;
  both.ltask = 1;
  both.image_laddr = 0x10800;
  both.cmds = {write_word(0x10108, 1)};
  EXPECT_FALSE(r.sys->syscall(0, 1, both, [] {}));
  r.run(2);
  EXPECT_EQ(mbcf_stat(r, "packets_sent"), sent);
  EXPECT_EQ(mbcf_stat(r, "requests_refused"), refused + forged + 5);
  EXPECT_EQ(r.word(1, 0x10108), 0u);
}

}  // namespace
}  // namespace mbpsim::mbcf
