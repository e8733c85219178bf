// MBCF command semantics (4.1-4.4), protection (3.3-3.4) and the packet codec (6.1.2).
#include <gtest/gtest.h>

#include <cstring>

#include "models/mbcf/atomic.h"
#include "models/mbcf/engine.h"
#include "models/mbcf/packet.h"
#include "tests/test_util.h"

namespace mbpsim::mbcf {
namespace {

constexpr uint32_t kPage = 4096;

struct Fixture : ::testing::Test {
  TaskSpace ts{"os", 1, kPage};
  Task* t = nullptr;
  void SetUp() override {
    t = &ts.create_task(5, 0xC0FFEE);
    ts.map(*t, 0x10000, 4, kPermRW);
  }
  Packet pkt(std::vector<Command> cmds, uint32_t key = 0xC0FFEE) {
    Packet p;
    p.src_pnode = 2;
    p.src_ptask = 3;
    p.src_key = 77;
    p.dst_ptask = 5;
    p.dst_key = key;
    p.cmds = std::move(cmds);
    return p;
  }
  static Command cmd(Cmd k, uint32_t laddr, std::vector<uint8_t> d = {}, ReplyMode rm = ReplyMode::None) {
    Command c;
    c.cmd = k;
    c.laddr = laddr;
    c.length = static_cast<uint32_t>(d.size());
    c.data = std::move(d);
    c.opt.reply = rm;
    if (rm != ReplyMode::None) c.status_laddr = 0x500;
    return c;
  }
  uint32_t word(uint32_t a) { return ts.load32(*t, a); }
};

std::vector<uint8_t> le(std::initializer_list<uint32_t> ws) {
  std::vector<uint8_t> v;
  for (uint32_t w : ws)
    for (int i = 0; i < 4; ++i) v.push_back(static_cast<uint8_t>(w >> (8 * i)));
  return v;
}

TEST_F(Fixture, WriteAndWriteF) {
  auto r = execute(ts, pkt({cmd(Cmd::Write, 0x10010, {1, 2, 3, 4, 5})}));
  ASSERT_EQ(r.outcome, ExecResult::Outcome::Done);
  EXPECT_TRUE(r.replies.empty());  // NO_REPLY_STATUS
  uint8_t b[5];
  ts.read(*t, 0x10010, b, 5);
  EXPECT_EQ(b[4], 5);
  EXPECT_EQ(r.structures, 0u) << "a WRITE's target is plain memory, no MBCF structure";
  Command f = cmd(Cmd::WriteF, 0x10100, le({0xAB}), ReplyMode::Status);
  f.flag_laddr = 0x10200;
  f.flag_value = 9;
  r = execute(ts, pkt({f}));
  EXPECT_EQ(word(0x10100), 0xABu);
  EXPECT_EQ(word(0x10200), 9u);
  ASSERT_EQ(r.replies.size(), 1u);
  EXPECT_EQ(r.replies[0].status, static_cast<uint32_t>(Status::Succeeded));
  EXPECT_EQ(r.replies[0].status_laddr, 0x500u);
}

TEST_F(Fixture, ReadSwapFetchAddVectorAndCompSwap) {
  ts.store32(*t, 0x10000, 10);
  ts.store32(*t, 0x10004, 20);
  Command rd = cmd(Cmd::Read, 0x10000);
  rd.length = 8;
  rd.data_laddr = 0x900;
  auto r = execute(ts, pkt({rd}));
  ASSERT_EQ(r.replies.size(), 1u);  // READ always answers with its data
  EXPECT_EQ(r.replies[0].data, le({10, 20}));
  EXPECT_EQ(r.replies[0].data_laddr, 0x900u);

  r = execute(ts, pkt({cmd(Cmd::FetchAdd, 0x10000, le({1, 5}))}));  // vector form
  EXPECT_EQ(r.replies[0].data, le({10, 20}));
  EXPECT_EQ(word(0x10000), 11u);
  EXPECT_EQ(word(0x10004), 25u);

  r = execute(ts, pkt({cmd(Cmd::Swap, 0x10000, le({7}))}));
  EXPECT_EQ(r.replies[0].data, le({11}));
  EXPECT_EQ(word(0x10000), 7u);

  Command cs = cmd(Cmd::CompSwap, 0x10004, le({99}), ReplyMode::Status);
  cs.flag_laddr = 0x10000;  // reference word: 7
  cs.flag_value = 8;
  r = execute(ts, pkt({cs}));
  EXPECT_EQ(r.statuses[0], Status::CompareFailed);
  EXPECT_EQ(word(0x10004), 25u);
  cs.flag_value = 7;
  r = execute(ts, pkt({cs}));
  EXPECT_EQ(r.statuses[0], Status::Succeeded);
  EXPECT_EQ(word(0x10004), 99u);
  EXPECT_EQ(r.replies[0].data, le({25}));
}

TEST_F(Fixture, FifoAndFifoeStoppedStateWithThreeStatuses) {
  init_fifo(ts, *t, 0x10000, 0x10100, 64);
  std::vector<uint8_t> d(12, 1);
  int ok = 0;
  Status last = Status::Succeeded;
  for (int i = 0; i < 8; ++i) {
    auto r = execute(ts, pkt({cmd(Cmd::Fifo, 0x10000, d, ReplyMode::OnlyFailures)}));
    last = r.statuses[0];
    EXPECT_EQ(r.structures, 1u) << "the FIFO's structure is read, stored into or found full";
    if (last == Status::Succeeded) {
      ++ok;
      EXPECT_TRUE(r.replies.empty());  // REPLY_ONLY_FAILURES: silence on success
    } else {
      ASSERT_EQ(r.replies.size(), 1u);
    }
  }
  EXPECT_EQ(last, Status::FifoFull);
  EXPECT_EQ(static_cast<uint32_t>(ok), fifo_entries(ts, *t, 0x10000));
  // FIFOe: the first failure stops the FIFO, later NORMALs fail as stopped even with room.
  init_fifo(ts, *t, 0x10000, 0x10100, 64);
  std::vector<Status> st;
  for (int i = 0; i < 5; ++i) st.push_back(execute(ts, pkt({cmd(Cmd::FifoeNormal, 0x10000, d)})).statuses[0]);
  EXPECT_EQ(st[3], Status::FifoeStoppedNow);
  EXPECT_EQ(st[4], Status::FifoeStopped);
  ASSERT_TRUE(fifo_pop(ts, *t, 0x10000));
  ASSERT_TRUE(fifo_pop(ts, *t, 0x10000));
  ASSERT_TRUE(fifo_pop(ts, *t, 0x10000));
  EXPECT_EQ(execute(ts, pkt({cmd(Cmd::FifoeNormal, 0x10000, d)})).statuses[0], Status::FifoeStopped);
  EXPECT_EQ(execute(ts, pkt({cmd(Cmd::FifoeRetry, 0x10000, d)})).statuses[0], Status::Succeeded);
  EXPECT_EQ(execute(ts, pkt({cmd(Cmd::FifoeNormal, 0x10000, d)})).statuses[0], Status::Succeeded);
  // Wrapping keeps the order.
  for (int i = 0; i < 20; ++i) {
    while (fifo_pop(ts, *t, 0x10000)) {
    }
    auto r = execute(ts, pkt({cmd(Cmd::Fifo, 0x10000, le({static_cast<uint32_t>(i), 0, 0}))}));
    ASSERT_EQ(r.statuses[0], Status::Succeeded);
    auto e = fifo_pop(ts, *t, 0x10000);
    ASSERT_TRUE(e);
    EXPECT_EQ(load_le(e->data(), 4), static_cast<uint64_t>(i));
  }
}

struct SignalCase {
  SigInvoke inv;
  SigStore store;
  SigCond cond;
};

class SignalTest : public Fixture, public ::testing::WithParamInterface<SignalCase> {};

// Every invocation type x storage type x condition: what is stored, what is invoked, when
// the command is refused, and the light-weight call that resets the running flag.
TEST_P(SignalTest, StoresInvokesAndHonoursTheCondition) {
  const SignalCase sc = GetParam();
  t->uls_pc = 0x7000;
  const uint32_t S = 0x10000, F = 0x10040, B = 0x10100;
  init_fifo(ts, *t, F, 0x11000, 256);
  init_signal(ts, *t, S, sc.inv, sc.store, sc.cond, 0x6000, B, 128, F);
  Command c = cmd(Cmd::Signal, S, le({0x1234}), ReplyMode::Status);
  c.ssp_pc = 0x5000;
  c.offset = 16;
  auto r1 = execute(ts, pkt({c}));
  ASSERT_EQ(r1.outcome, ExecResult::Outcome::Done);
  // The receive routine's structures (their cost): the signal structure, and the FIFO it stores
  // into when it queues (an invocation type of NONE stops at the structure).
  EXPECT_EQ(r1.structures, sc.inv != SigInvoke::None && sc.store == SigStore::Quew ? 2u : 1u);
  if (sc.inv == SigInvoke::None) {
    EXPECT_EQ(r1.statuses[0], Status::SignalStopped);
    EXPECT_TRUE(r1.invocations.empty());
    return;
  }
  EXPECT_EQ(r1.statuses[0], Status::Succeeded);
  const bool bare = sc.inv == SigInvoke::MemwSsp;
  // What the routine moved into the task's memory (its copy's cost): the record it stored, the
  // requester's information first unless MEMW_SSP; NONW stores nothing.
  EXPECT_EQ(r1.data_bytes, sc.store == SigStore::Nonw ? 0u : (bare ? 0u : 12u) + 4u);
  // Storage
  switch (sc.store) {
    case SigStore::Nonw: EXPECT_EQ(fifo_entries(ts, *t, F), 0u); EXPECT_EQ(word(B), 0u); break;
    case SigStore::Quew: EXPECT_EQ(fifo_entries(ts, *t, F), 1u); break;
    case SigStore::Memw:
      EXPECT_EQ(word(B + (bare ? 0 : 12)), 0x1234u);
      if (!bare) {
        EXPECT_EQ(word(B), 2u);  // the requester's Pnode comes first
      }
      break;
    case SigStore::MemwOffset: EXPECT_EQ(word(B + 16 + (bare ? 0 : 12)), 0x1234u); break;
  }
  // Invocation
  if (sc.inv == SigInvoke::Polling) {
    EXPECT_TRUE(r1.invocations.empty());
    return;
  }
  ASSERT_EQ(r1.invocations.size(), 1u);
  const Invocation iv = r1.invocations[0];
  switch (sc.inv) {
    case SigInvoke::UlsInvoke: EXPECT_EQ(iv.kind, Invocation::Uls); EXPECT_EQ(iv.pc, 0x7000u); break;
    case SigInvoke::DspByUls: EXPECT_EQ(iv.kind, Invocation::DspByUls); EXPECT_EQ(iv.dsp_pc, 0x6000u); break;
    case SigInvoke::DspInvoke: EXPECT_EQ(iv.pc, 0x6000u); break;
    default: EXPECT_EQ(iv.pc, 0x5000u); break;
  }
  // A second signal while the first program still runs.
  auto r2 = execute(ts, pkt({c}));
  switch (sc.cond) {
    case SigCond::EveryTimeBlk:
    case SigCond::FirstOnlyBlk:
      EXPECT_EQ(r2.statuses[0], Status::SignalCondition);
      EXPECT_TRUE(r2.invocations.empty());
      break;
    case SigCond::EveryTimeNonblk:
      EXPECT_EQ(r2.statuses[0], Status::Succeeded);
      EXPECT_EQ(r2.invocations.size(), 1u);
      break;
    case SigCond::FirstOnlyNonblk:
      EXPECT_EQ(r2.statuses[0], Status::Succeeded);
      EXPECT_TRUE(r2.invocations.empty());  // stored, not invoked again
      break;
  }
  // The program returns; FIRST_ONLY conditions need the light-weight call to reset the flag.
  signal_returned(ts, *t, S);
  if (sc.cond == SigCond::EveryTimeNonblk) signal_returned(ts, *t, S);
  if (sc.cond == SigCond::FirstOnlyBlk || sc.cond == SigCond::FirstOnlyNonblk) {
    EXPECT_NE(word(S + 12), 0u);
    while (signal_reset(ts, *t, S)) {
    }
  }
  EXPECT_EQ(word(S + 12), 0u);
  EXPECT_EQ(execute(ts, pkt({c})).invocations.size(), 1u);
}

std::vector<SignalCase> all_signal_cases() {
  std::vector<SignalCase> v;
  for (uint32_t i = 0; i <= 6; ++i)
    for (uint32_t s = 0; s <= 3; ++s)
      for (uint32_t c = 0; c <= 3; ++c) v.push_back({static_cast<SigInvoke>(i), static_cast<SigStore>(s), static_cast<SigCond>(c)});
  return v;
}
INSTANTIATE_TEST_SUITE_P(AllStructures, SignalTest, ::testing::ValuesIn(all_signal_cases()));

TEST_F(Fixture, ZBufferAndPacked) {
  ts.store32(*t, 0x10200, 50);
  Command z = cmd(Cmd::ZBuffer, 0x10000, le({0xAA}));
  z.flag_laddr = 0x10200;
  z.flag_value = 60;  // farther: no effect
  execute(ts, pkt({z}));
  EXPECT_EQ(word(0x10000), 0u);
  z.flag_value = 40;
  execute(ts, pkt({z}));
  EXPECT_EQ(word(0x10000), 0xAAu);
  EXPECT_EQ(word(0x10200), 40u);
  // Packed: 3 one-byte elements; references 10, 10, 10 against packet 5, 20, 1.
  for (int i = 0; i < 3; ++i) ts.store32(*t, 0x10300 + 4 * i, 10);
  Command p;
  p.cmd = Cmd::ZBufPacked;
  p.laddr = 0x10400;
  p.length = 3;
  p.flag_laddr = 0x10300;
  p.flag_value = 1;
  p.data = {5, 0, 0, 0, 0x11, 20, 0, 0, 0, 0x22, 1, 0, 0, 0, 0x33};
  execute(ts, pkt({p}));
  uint8_t b[3];
  ts.read(*t, 0x10400, b, 3);
  EXPECT_EQ(b[0], 0x11);
  EXPECT_EQ(b[1], 0);
  EXPECT_EQ(b[2], 0x33);
  EXPECT_EQ(word(0x10304), 10u);
}

TEST_F(Fixture, TaskqueAndScheduling) {
  Command q = cmd(Cmd::WriteTaskque, 0, {1, 2}, ReplyMode::Status);
  EXPECT_EQ(execute(ts, pkt({q})).statuses[0], Status::NoTaskque);
  t->has_taskque = true;
  t->taskque_capacity = 1;
  EXPECT_EQ(execute(ts, pkt({q})).statuses[0], Status::Succeeded);
  EXPECT_EQ(execute(ts, pkt({q})).statuses[0], Status::TaskqueFull);
  auto e = read_taskque(*t);
  ASSERT_TRUE(e);
  EXPECT_EQ(load_le(e->data(), 4), 2u);           // the requester's Pnode
  EXPECT_EQ(load_le(e->data() + 8, 4), 77u);      // and its key, for the reply channel
  t->blocked = true;
  Command w = cmd(Cmd::Write, 0x10000, {1});
  EXPECT_FALSE(execute(ts, pkt({w})).woke);
  w.opt.schedule = true;
  EXPECT_TRUE(execute(ts, pkt({w})).woke);
  EXPECT_FALSE(t->blocked);
}

// 4.3: WRITE_TASKQUE needs no key (a client does not know its server's); nothing else does
// without one, not even beside a WRITE_TASKQUE in the same packet.
TEST_F(Fixture, WriteTaskqueAloneNeedsNoKey) {
  t->has_taskque = true;
  t->taskque_capacity = 4;
  Command q = cmd(Cmd::WriteTaskque, 0, {1, 2}, ReplyMode::Status);
  const ExecResult a = execute(ts, pkt({q, q}, 0));
  EXPECT_EQ(a.outcome, ExecResult::Outcome::Done);
  EXPECT_EQ(t->taskque.size(), 2u);
  Command w = cmd(Cmd::Write, 0x10000, {9});
  const ExecResult b = execute(ts, pkt({q, w}, 0));
  EXPECT_EQ(b.outcome, ExecResult::Outcome::BadKey);
  EXPECT_EQ(t->taskque.size(), 2u);
  EXPECT_EQ(word(0x10000) & 0xff, 0u);
}

TEST_F(Fixture, ForgedKeyOutOfWindowAndPageCrossingChangeNothing) {
  Command w = cmd(Cmd::Write, 0x10000, {9, 9, 9, 9}, ReplyMode::Status);
  EXPECT_EQ(execute(ts, pkt({w}, 0xBAD)).outcome, ExecResult::Outcome::BadKey);
  EXPECT_EQ(word(0x10000), 0u);
  Packet nt = pkt({w});
  nt.dst_ptask = 99;
  EXPECT_EQ(execute(ts, nt).outcome, ExecResult::Outcome::NoTask);
  // A write that runs past the mapped window: refused whole, nothing written.
  Command far = cmd(Cmd::Write, 0x10000 + 4 * kPage - 2, {1, 2, 3, 4});
  auto r = execute(ts, pkt({far}));
  EXPECT_EQ(r.violation, ViolationCode::Unmapped);
  EXPECT_EQ(ts.load32(*t, 0x10000 + 4 * kPage - 4), 0u);
  // An atomic across a page boundary.
  r = execute(ts, pkt({cmd(Cmd::Swap, 0x10000 + kPage - 4, le({1, 2}))}));
  EXPECT_EQ(r.violation, ViolationCode::PageCrossing);
  // Read-only page.
  ts.map(*t, 0x40000, 1, kPermRead);
  EXPECT_EQ(execute(ts, pkt({cmd(Cmd::Write, 0x40000, {1})})).violation, ViolationCode::Protection);
}

// FIFOe keeps each sender's order when several senders overflow one FIFO: the stopped state
// is per sender, so A's RETRY does not let B's newer entry in ahead of B's cancelled one (the
// counterexample SPIN found with one stopped flag per FIFO: models/verify/fifoe.pml).
TEST_F(Fixture, FifoeStoppedStateIsPerSender) {
  init_fifo(ts, *t, 0x10000, 0x10100, 48);
  auto from = [&](uint32_t ptask, Cmd k, uint8_t tag) {
    Packet q = pkt({cmd(k, 0x10000, std::vector<uint8_t>(12, tag))});
    q.src_ptask = ptask;
    return execute(ts, q).statuses[0];
  };
  std::vector<uint8_t> order, want;  // what the owner takes, and the order it must be in
  auto take_all = [&] {
    while (auto e = fifo_pop(ts, *t, 0x10000)) order.push_back((*e)[0]);
  };
  uint8_t a = 0xA0;
  while (from(3, Cmd::FifoeNormal, a) == Status::Succeeded) want.push_back(a++);
  ASSERT_GE(want.size(), 1u);                                           // A's entry `a` stopped A
  EXPECT_EQ(from(4, Cmd::FifoeNormal, 0xB0), Status::FifoeStoppedNow);  // B's first cancellation
  EXPECT_EQ(ts.load32(*t, 0x10010) & 1, 1u);                           // the owner sees a stop
  take_all();
  EXPECT_EQ(from(3, Cmd::FifoeRetry, a), Status::Succeeded);  // A runs again
  want.push_back(a);
  EXPECT_EQ(from(4, Cmd::FifoeNormal, 0xB1), Status::FifoeStopped);  // B's newer entry still waits
  EXPECT_EQ(ts.load32(*t, 0x10010) & 1, 1u);
  take_all();
  EXPECT_EQ(from(4, Cmd::FifoeRetry, 0xB0), Status::Succeeded);  // B's RETRY restarts B
  EXPECT_EQ(ts.load32(*t, 0x10010) & 1, 0u);
  take_all();
  EXPECT_EQ(from(4, Cmd::FifoeNormal, 0xB1), Status::Succeeded);
  take_all();
  want.push_back(0xB0);
  want.push_back(0xB1);
  EXPECT_EQ(order, want);
  // The owner clearing the flag (re-initialising the FIFO) lifts every sender's stop.
  init_fifo(ts, *t, 0x10000, 0x10100, 48);
  EXPECT_EQ(from(3, Cmd::FifoeNormal, 1), Status::Succeeded);
  EXPECT_EQ(from(4, Cmd::FifoeNormal, 2), Status::Succeeded);
}

// Adversarial: a combined packet is refused whole when its key is forged, whatever its
// commands, and the task's memory is byte-identical afterwards (every sub-command shares the
// packet's destination key, 4.4, so one check guards them all; the mutation test
// combined_no_key_check removes it for combined packets).
TEST_F(Fixture, CombinedPacketWithAForgedKeyChangesNothing) {
  auto snapshot = [&] {
    std::vector<uint32_t> m;
    for (uint32_t a = 0x10000; a < 0x10000 + 4 * kPage; a += 4) m.push_back(ts.load32(*t, a));
    return m;
  };
  const auto before = snapshot();
  for (uint32_t key : {0u, 0xC0FFEFu, 0xFFFFFFFFu, 0x00C0FFEEu ^ 0x80000000u}) {
    auto r = execute(ts, pkt({cmd(Cmd::Write, 0x10000, {1, 2, 3, 4}), cmd(Cmd::Write, 0x10008, {5}),
                              cmd(Cmd::Write, 0x11000, {6, 6}, ReplyMode::Status)},
                             key));
    EXPECT_EQ(r.outcome, ExecResult::Outcome::BadKey) << std::hex << key;
    EXPECT_EQ(r.violation, ViolationCode::BadKey);
    EXPECT_TRUE(r.replies.empty());
  }
  EXPECT_EQ(snapshot(), before);
}

TEST_F(Fixture, CombinedPacketIsOneAtomicLumpUnderThe44Rules) {
  // The second command faults: the first one's write is rolled back.
  auto r = execute(ts, pkt({cmd(Cmd::Write, 0x10000, {7, 7, 7, 7}), cmd(Cmd::Write, 0x90000, {1})}));
  EXPECT_EQ(r.outcome, ExecResult::Outcome::Violation);
  EXPECT_EQ(r.violation_index, 1u);
  EXPECT_EQ(word(0x10000), 0u);
  // Atomics are never combined; two data replies are not either.
  r = execute(ts, pkt({cmd(Cmd::Write, 0x10000, {1}), cmd(Cmd::Swap, 0x10004, le({1}))}));
  EXPECT_EQ(r.violation, ViolationCode::BadCombination);
  Command rd = cmd(Cmd::Read, 0x10000);
  rd.length = 4;
  EXPECT_EQ(execute(ts, pkt({rd, rd})).violation, ViolationCode::BadCombination);
  // A fine combination works, and its replies are combined.
  r = execute(ts, pkt({cmd(Cmd::Write, 0x10000, {1}, ReplyMode::Status), cmd(Cmd::Write, 0x10008, {2}, ReplyMode::Status)}));
  EXPECT_EQ(r.outcome, ExecResult::Outcome::Done);
  EXPECT_EQ(r.replies.size(), 2u);
  // A swapped-out page: the lump stops with nothing done, to be replayed after the page-in.
  ts.set_present(*t, 0x11000, false);
  r = execute(ts, pkt({cmd(Cmd::Write, 0x10000, {5}), cmd(Cmd::Write, 0x11000, {5})}));
  EXPECT_EQ(r.outcome, ExecResult::Outcome::PageFault);
  EXPECT_EQ(word(0x10000) & 0xFF, 1u);
}

// A NIC's commands (the MBP2's PME) write into a WriteBuffer until its DMA makes the writes:
// the frames keep their bytes, the NIC's next commands see the buffered ones (a second FIFO
// entry goes after the first), an undone lump leaves nothing buffered, and the writes are runs
// of bytes within one frame, each naming its frame's physical address.
TEST_F(Fixture, ANicsCommandsWriteIntoItsWriteBufferAndSeeWhatTheyBuffered) {
  init_fifo(ts, *t, 0x10000, 0x10100, 64);
  WriteBuffer wb(1536);
  {
    TaskSpace::Via via(ts, nullptr, &wb);
    auto r = execute(ts, pkt({cmd(Cmd::Fifo, 0x10000, {1, 2, 3, 4, 5, 6, 7, 8})}));
    ASSERT_EQ(r.outcome, ExecResult::Outcome::Done);
    ASSERT_EQ(wb.untaken(), 2u);  // the entry (length, data) and the tail
    EXPECT_EQ(wb.untaken_write(0).laddr, 0x10100u);
    EXPECT_EQ(wb.untaken_write(0).bytes.size(), 12u);
    EXPECT_EQ(wb.untaken_write(0).pa, static_cast<uint64_t>(t->pages.at(0x10).frame) * kPage + 0x100);
    EXPECT_EQ(wb.untaken_write(1).laddr, 0x10008u);
    EXPECT_EQ(wb.untaken_write(1).ptask, 5u);
    wb.take();
    r = execute(ts, pkt({cmd(Cmd::Fifo, 0x10000, {9, 9, 9, 9})}));
    ASSERT_EQ(r.outcome, ExecResult::Outcome::Done);
    ASSERT_EQ(wb.untaken(), 2u);
    EXPECT_EQ(wb.untaken_write(0).laddr, 0x1010cu);  // after the first entry, still unwritten
    EXPECT_EQ(ts.load32(*t, 0x10008), 0x10114u);     // what the NIC sees
    wb.take();
    // A lump that fails half way buffers nothing.
    r = execute(ts, pkt({cmd(Cmd::Write, 0x10200, {7, 7, 7, 7}), cmd(Cmd::Write, 0x90000, {1})}));
    EXPECT_EQ(r.outcome, ExecResult::Outcome::Violation);
    EXPECT_EQ(wb.untaken(), 0u);
    EXPECT_EQ(wb.size(), 4u);
    // A write across a page is two writes, one per frame, even where the frames follow.
    r = execute(ts, pkt({cmd(Cmd::Write, 0x10ffe, {1, 2, 3, 4})}));
    ASSERT_EQ(wb.untaken(), 2u);
    EXPECT_EQ(wb.untaken_write(1).laddr, 0x11000u);
    EXPECT_EQ(wb.untaken_write(1).pa, static_cast<uint64_t>(t->pages.at(0x11).frame) * kPage);
    wb.take();
  }
  // The host sees none of it yet.
  EXPECT_EQ(fifo_entries(ts, *t, 0x10000), 0u);
  EXPECT_EQ(word(0x10ffc), 0u);
  // The DMA makes the writes in order.
  WriteBuffer::Write w;
  while (wb.retire(&w)) std::memcpy(ts.frame(static_cast<uint32_t>(w.pa / kPage)) + w.pa % kPage, w.bytes.data(), w.bytes.size());
  EXPECT_EQ(fifo_entries(ts, *t, 0x10000), 2u);
  EXPECT_EQ(fifo_pop(ts, *t, 0x10000), (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(fifo_pop(ts, *t, 0x10000), (std::vector<uint8_t>{9, 9, 9, 9}));
  EXPECT_EQ(word(0x10ffc), 0x02010000u);
  EXPECT_EQ(word(0x11000) & 0xffff, 0x0403u);
}

// 4.4: a reply fits one packet. The target checks it itself (a sender that did not, or a
// station that forged the packet, would otherwise leave it holding a reply it cannot send).
TEST_F(Fixture, AReadWhoseReplyCannotFitAFrameIsRefusedWhole) {
  Command rd = cmd(Cmd::Read, 0x10000, {}, ReplyMode::Status);
  rd.length = 2000;
  rd.data_laddr = 0x600;
  auto r = execute(ts, pkt({rd}));
  EXPECT_EQ(r.outcome, ExecResult::Outcome::Violation);
  EXPECT_EQ(r.violation, ViolationCode::BadLength);
  EXPECT_TRUE(r.replies.empty());
  // What fits a bare frame may not fit once a NIC adds its own bytes.
  rd.length = 1400;
  EXPECT_EQ(execute(ts, pkt({rd})).outcome, ExecResult::Outcome::Done);
  EXPECT_EQ(execute(ts, pkt({rd}), kMaxPacketBytes - 100).violation, ViolationCode::BadLength);
}

TEST_F(Fixture, DummyTaskAliasesOnlyTheWorkingArea) {
  // Fig. 3.6/3.7: the server's working page is aliased into a dummy task with its own key.
  Task& dummy = ts.create_task(6, 0xD00D);
  ts.alias(*t, 0x11000, dummy, 0x80000, 1, kPermRW);
  Packet p = pkt({cmd(Cmd::Write, 0x80010, {0x42})}, 0xD00D);
  p.dst_ptask = 6;
  ASSERT_EQ(execute(ts, p).outcome, ExecResult::Outcome::Done);
  EXPECT_EQ(word(0x11010) & 0xFF, 0x42u);  // the server sees it through its own mapping
  // Anything outside the delegated page does not exist for the client.
  for (uint32_t a : {0x10000u, 0x7F000u, 0x81000u, 0x11010u}) {
    p.cmds = {cmd(Cmd::Write, a, {0xEE})};
    EXPECT_EQ(execute(ts, p).outcome, ExecResult::Outcome::Violation) << std::hex << a;
  }
  // The server's key does not open the dummy, nor the dummy's the server.
  p.dst_key = 0xC0FFEE;
  EXPECT_EQ(execute(ts, p).outcome, ExecResult::Outcome::BadKey);
  for (uint32_t pg = 0; pg < 4; ++pg)
    for (uint32_t a = 0; a < kPage; a += 4) ASSERT_NE(ts.load32(*t, 0x10000 + pg * kPage + a), 0xEEu);
}

// --------------------------------------------------------------------- codec

std::vector<Command> one_of_each() {
  std::vector<Command> v;
  for (Cmd k : {Cmd::Write, Cmd::WriteF, Cmd::Read, Cmd::Swap, Cmd::FetchAdd, Cmd::CompSwap, Cmd::Update, Cmd::Invalidate,
                Cmd::Fifo, Cmd::FifoeNormal, Cmd::FifoeRetry, Cmd::Signal, Cmd::ZBuffer, Cmd::ZBufPacked,
                Cmd::WriteTaskque, Cmd::Reply, Cmd::Violation, Cmd::Ack})
    for (ReplyMode rm : {ReplyMode::None, ReplyMode::Status, ReplyMode::OnlyFailures}) {
      Command c;
      c.cmd = k;
      c.opt.reply = rm;
      c.opt.emb = true;
      c.opt.emb_colour = 5;
      c.opt.schedule = rm == ReplyMode::Status;
      c.laddr = 0x1234;
      c.flag_laddr = 0x2000;
      c.flag_value = k == Cmd::ZBufPacked ? 2 : 77;
      c.ssp_pc = 0x3000;
      c.offset = 8;
      c.origin = 3;
      c.aux = 4;
      c.status = 1;
      const bool data = !(k == Cmd::Read || k == Cmd::Invalidate || k == Cmd::Violation || k == Cmd::Ack);
      const bool has_len = !(k == Cmd::Invalidate || k == Cmd::Violation || k == Cmd::Ack);
      const bool has_dl = k == Cmd::Read || k == Cmd::Swap || k == Cmd::FetchAdd || k == Cmd::CompSwap || k == Cmd::Reply;
      const bool has_st = (rm != ReplyMode::None && k != Cmd::Reply && k != Cmd::Ack) || k == Cmd::Reply || k == Cmd::Violation;
      c.length = has_len ? 3 : 0;
      if (data) c.data.assign(k == Cmd::ZBufPacked ? 3 * 6 : 3, 0x5A);
      c.data_laddr = has_dl ? 0x4000 : kNoAddr;
      c.status_laddr = has_st ? 0x5000 : kNoAddr;
      // Fields a command does not carry decode as their defaults.
      if (k != Cmd::WriteF && k != Cmd::CompSwap && k != Cmd::ZBuffer && k != Cmd::ZBufPacked) c.flag_laddr = c.flag_value = 0;
      if (k != Cmd::Signal) c.ssp_pc = c.offset = 0;
      if (k != Cmd::Update && k != Cmd::Invalidate && k != Cmd::Ack) c.origin = 0;
      if (k != Cmd::Violation && k != Cmd::Ack) c.aux = 0;
      if (k != Cmd::Reply && k != Cmd::Violation) c.status = 0;
      if (k == Cmd::WriteTaskque || k == Cmd::Ack || k == Cmd::Violation || k == Cmd::Reply) c.laddr = 0;
      v.push_back(c);
    }
  return v;
}

Packet header() {
  Packet p;
  p.dst_mac = mac_of(7);
  p.src_mac = mac_of(3);
  p.src_pnode = 3;
  p.end_p = 200;
  p.ctrl_p = kSequenced | kAckReq;
  p.recv_p = 17;
  p.src_ptask = 11;
  p.src_key = 0xDEADBEEF;
  p.dst_ptask = 12;
  p.dst_key = 0x01020304;
  return p;
}

TEST(Codec, Figure61WriteLayoutIsByteExact) {
  Packet p = header();
  Command w;
  w.cmd = Cmd::Write;
  w.laddr = 0x00A0B0C0;
  w.length = 4;
  w.data = {1, 2, 3, 4};
  p.cmds = {w};
  std::vector<uint8_t> b;
  ASSERT_TRUE(encode(p, b));
  ASSERT_EQ(b.size(), 56u);  // 52 + N
  EXPECT_EQ(b[12], 0x88);
  EXPECT_EQ(b[13], 0xB5);
  EXPECT_EQ((b[14] << 8) | b[15], 56);
  EXPECT_EQ(b[19], 3);                 // source Pnode
  EXPECT_EQ(b[21], 200);               // END_P
  EXPECT_EQ(b[23], 17);                // RECV_P
  EXPECT_EQ(b[28], 0xDE);              // source key
  EXPECT_EQ(b[39], 0x04);              // destination key
  EXPECT_EQ(b[43], 1);                 // MBCF_WRITE
  EXPECT_EQ(b[45], 0xA0);              // target Laddr at 44
  EXPECT_EQ(b[51], 4);                 // length at 48
  EXPECT_EQ(b[52], 1);                 // data at 52
}

TEST(Codec, RoundTripsEveryCommandAloneAndCombined) {
  for (const Command& c : one_of_each()) {
    Packet p = header();
    p.cmds = {c};
    std::vector<uint8_t> b;
    ASSERT_TRUE(encode(p, b)) << to_string(c.cmd);
    Packet q;
    ASSERT_EQ(decode(b.data(), b.size(), q), DecodeError::None) << to_string(c.cmd);
    EXPECT_TRUE(q == p) << to_string(c.cmd) << " reply " << static_cast<int>(c.opt.reply);
  }
  // Combined: later commands start on 4-byte boundaries (Fig. 6.2b).
  Packet p = header();
  Command a, b2;
  a.cmd = b2.cmd = Cmd::Write;
  a.laddr = 0x10;
  a.length = 1;
  a.data = {0xEE};
  b2.laddr = 0x20;
  b2.length = 4;
  b2.data = {1, 2, 3, 4};
  p.cmds = {a, b2};
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(encode(p, bytes));
  EXPECT_EQ(bytes.size(), 40u + 13 + 3 + 16);
  EXPECT_EQ(bytes[56 + 3], 1);  // the second command word at an aligned offset
  Packet q;
  ASSERT_EQ(decode(bytes.data(), bytes.size(), q), DecodeError::None);
  EXPECT_TRUE(q == p);
}

TEST(Codec, MalformedPacketsAreRejectedWithoutOverreading) {
  Packet p = header();
  Command w;
  w.cmd = Cmd::Write;
  w.length = 8;
  w.data.assign(8, 3);
  Command w2 = w;
  p.cmds = {w, w2};
  std::vector<uint8_t> good;
  ASSERT_TRUE(encode(p, good));
  Packet q;
  // Every truncation is refused; decoding a heap copy of exactly n bytes lets ASan catch overreads.
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(n));
    EXPECT_NE(decode(cut.data(), cut.size(), q), DecodeError::None) << n;
  }
  auto bad = good;
  bad[15] += 4;  // total length beyond the frame
  EXPECT_EQ(decode(bad.data(), bad.size(), q), DecodeError::LengthMismatch);
  bad = good;
  bad[15] -= 4;  // total length shorter than the commands
  EXPECT_NE(decode(bad.data(), bad.size(), q), DecodeError::None);
  bad = good;
  bad[43] = 99;  // unknown command
  EXPECT_EQ(decode(bad.data(), bad.size(), q), DecodeError::UnknownCommand);
  bad = good;
  bad[12] = 0x08;  // IP, not MBCF
  EXPECT_EQ(decode(bad.data(), bad.size(), q), DecodeError::WrongType);
  // A second command that is not on a 4-byte boundary: padding bytes not zero.
  Command a;
  a.cmd = Cmd::Write;
  a.length = 1;
  a.data = {1};
  p.cmds = {a, w};
  ASSERT_TRUE(encode(p, bad));
  bad[53] = 0x77;
  EXPECT_EQ(decode(bad.data(), bad.size(), q), DecodeError::BadAlignment);
  bad = good;
  bad[51] = 200;  // the first command's data length runs past the end
  EXPECT_EQ(decode(bad.data(), bad.size(), q), DecodeError::Truncated);
  // Frames may carry Ethernet padding after the total length.
  auto padded = good;
  padded.resize(good.size() + 10, 0);
  EXPECT_EQ(decode(padded.data(), padded.size(), q), DecodeError::None);
}

}  // namespace
}  // namespace mbpsim::mbcf

namespace mbpsim::mbcf {
namespace {

// The packet fuzzer's seed corpus (tests/fuzz/corpus/mbcf_packet) holds the encoding of every
// command, alone with each reply mode and combined, so every decoder path starts covered.
// MBPSIM_REGEN_CORPUS=1 rewrites the files after a deliberate format change.
TEST(Codec, FuzzCorpusHoldsEveryCommandsEncoding) {
  namespace fs = std::filesystem;
  const fs::path dir = test::fuzz_corpus("mbcf_packet");
  std::vector<std::pair<std::string, Packet>> want;
  for (const Command& c : one_of_each()) {
    Packet p = header();
    p.cmds = {c};
    want.emplace_back(std::string(to_string(c.cmd)) + "-reply" + std::to_string(static_cast<int>(c.opt.reply)), p);
  }
  Packet comb = header();
  for (const Command& c : one_of_each())
    if (c.cmd == Cmd::Write || c.cmd == Cmd::Fifo || c.cmd == Cmd::Signal) comb.cmds.push_back(c);
  want.emplace_back("combined", comb);
  const bool regen = test::regen_corpus();
  if (regen) fs::create_directories(dir);
  for (const auto& [name, p] : want) {
    std::vector<uint8_t> b;
    ASSERT_TRUE(encode(p, b)) << name;
    const fs::path f = dir / (name + ".bin");
    if (regen) test::write_text(f, std::string(b.begin(), b.end()));
    ASSERT_TRUE(fs::exists(f)) << f << " missing: MBPSIM_REGEN_CORPUS=1 rewrites the corpus";
    const std::string got = test::read_text(f);
    EXPECT_EQ(got, std::string(b.begin(), b.end())) << f << " is stale: MBPSIM_REGEN_CORPUS=1 rewrites it";
  }
}

}  // namespace
}  // namespace mbpsim::mbcf
