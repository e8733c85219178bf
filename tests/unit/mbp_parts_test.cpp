// Parts of the MBP system that need no simulation: the controllers' tables, the atomic
// command semantics, and the cache and TLB arrays.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "models/mbcf/atomic.h"
#include "models/mbp/protocol.h"
#include "models/mbp/system_internal.h"
#include "models/core/rng.h"
#include <cstdio>
#include <unordered_map>
#include "models/node/cache.h"

namespace mbpsim {
namespace {

TEST(ProtocolTables, EveryRowIsUniqueAndLooksUp) {
  std::set<std::pair<int, int>> seen;
  for (int i = 0; i < mbp::kNumHomeRows; ++i) {
    const auto& r = mbp::kHomeRows[i];
    EXPECT_TRUE(seen.insert({static_cast<int>(r.state), static_cast<int>(r.event)}).second)
        << "duplicate home row " << to_string(r.state) << "/" << to_string(r.event);
    EXPECT_EQ(mbp::home_action(r.state, r.event), r.action);
    EXPECT_EQ(mbp::home_next(r.state, r.event), r.next);
    EXPECT_NE(r.next, 0) << "home row " << to_string(r.state) << "/" << to_string(r.event) << " leads nowhere";
    if (r.action == mbp::HAction::Defer) {  // a busy block keeps its state while requests wait
      EXPECT_EQ(r.next, mbp::hs(r.state)) << to_string(r.state) << "/" << to_string(r.event);
    }
  }
  seen.clear();
  for (int i = 0; i < mbp::kNumRemoteRows; ++i) {
    const auto& r = mbp::kRemoteRows[i];
    EXPECT_TRUE(seen.insert({static_cast<int>(r.state), static_cast<int>(r.event)}).second)
        << "duplicate remote row " << to_string(r.state) << "/" << to_string(r.event);
    EXPECT_EQ(mbp::remote_row(r.state, r.event), &r);
  }
  // Pairs with no row are undefined: a recall to a shared copy, data nobody asked for.
  EXPECT_EQ(mbp::remote_row(mbp::RState::S, mbp::REvent::Recall), nullptr);
  EXPECT_EQ(mbp::remote_row(mbp::RState::I, mbp::REvent::Data), nullptr);
  EXPECT_EQ(mbp::home_action(mbp::HState::None, mbp::HEvent::RecallData), mbp::HAction::Undefined);
  // Every busy home state defers new requests.
  for (auto s : {mbp::HState::RecallS, mbp::HState::RecallX, mbp::HState::InvRound, mbp::HState::UpdRound})
    EXPECT_EQ(mbp::home_action(s, mbp::HEvent::GetS), mbp::HAction::Defer);
}

// Every message type has its own name, and a value past them (the Count marker, or the byte of
// a corrupted message that reaches the "unexpected message" error) is named as such instead of
// being read past the table (gcc's unity build saw the out-of-bounds read in the error path).
TEST(ProtocolTables, EveryMessageTypeIsNamedAndAValuePastThemIsNotReadOutOfBounds) {
  std::set<std::string> names;
  for (int i = 0; i < mbp::kNumMsgTypes; ++i) {
    const std::string n = mbp::to_string(static_cast<mbp::MsgType>(i));
    EXPECT_NE(n, "(not a message type)") << i;
    EXPECT_TRUE(names.insert(n).second) << "two message types named " << n;
  }
  EXPECT_STREQ(mbp::to_string(mbp::MsgType::GetS), "GetS");
  EXPECT_STREQ(mbp::to_string(mbp::MsgType::PutAck), "PutAck");
  EXPECT_STREQ(mbp::to_string(mbp::MsgType::Count), "(not a message type)");
  EXPECT_STREQ(mbp::to_string(static_cast<mbp::MsgType>(200)), "(not a message type)");
}

TEST(AtomicSemantics, SwapFetchAddVectorAndCompareSwap) {
  using mbcf::AtomicArgs;
  using mbcf::AtomicOp;
  uint8_t mem[32] = {}, old[32];
  AtomicArgs a;
  a.op = AtomicOp::FetchAdd;
  a.width = 4;
  a.operand[0] = 0xffffffff;
  mbcf::store_le(mem, 4, 5);
  EXPECT_TRUE(mbcf::apply_atomic(a, mem, old));
  EXPECT_EQ(mbcf::load_le(old, 4), 5u);
  EXPECT_EQ(mbcf::load_le(mem, 4), 4u) << "wraps at the element width";
  EXPECT_EQ(mem[4], 0) << "the neighbouring bytes are untouched";
  a = AtomicArgs();
  a.op = AtomicOp::FetchAddVec;
  a.width = 8;
  a.count = 3;
  a.operand[0] = 1;
  a.operand[1] = 2;
  a.operand[2] = 3;
  EXPECT_EQ(a.bytes(), 24u);
  mbcf::apply_atomic(a, mem + 8, old);
  EXPECT_EQ(mbcf::load_le(mem + 16, 8), 2u);
  EXPECT_EQ(mbcf::load_le(mem + 24, 8), 3u);
  a = AtomicArgs();
  a.op = AtomicOp::CompSwap;
  a.compare = 7;
  a.operand[0] = 9;
  EXPECT_FALSE(mbcf::apply_atomic(a, mem + 8, old)) << "1 != 7: no change";
  EXPECT_EQ(mbcf::load_le(mem + 8, 8), 1u);
  a.compare = 1;
  EXPECT_TRUE(mbcf::apply_atomic(a, mem + 8, old));
  EXPECT_EQ(mbcf::load_le(mem + 8, 8), 9u);
  a = AtomicArgs();
  a.op = AtomicOp::Swap;
  a.operand[0] = 42;
  mbcf::apply_atomic(a, mem + 8, old);
  EXPECT_EQ(mbcf::load_le(old, 8), 9u);
  EXPECT_EQ(mbcf::load_le(mem + 8, 8), 42u);
}

TEST(CacheArrays, LruReplacementWithinASet) {
  node::Cache c(4 * 32, 2, 32);  // 2 sets of 2 ways
  auto fill = [&](uint64_t blk) {
    auto* l = c.victim(blk);
    l->blk = blk;
    l->state = 1;
    c.touch(l);
    return l;
  };
  fill(0);
  fill(2);
  c.touch(c.find(0));
  auto* v = c.victim(4);  // set 0 is full: 2 is the least recently used
  EXPECT_EQ(v->blk, 2u);
  fill(4);
  EXPECT_NE(c.find(0), nullptr);
  EXPECT_EQ(c.find(2), nullptr);
  EXPECT_NE(c.find(4), nullptr);
  EXPECT_EQ(c.find(1), nullptr);
  c.data(c.find(4))[31] = 7;
  EXPECT_EQ(c.data(c.find(4))[31], 7);
}

TEST(CacheArrays, TlbHitsMissesAndEvicts) {
  node::Tlb t(4, 4);
  uint64_t v = 0;
  EXPECT_FALSE(t.lookup(10, &v));
  for (uint64_t p = 0; p < 4; ++p) t.insert(p, p * 100);
  EXPECT_TRUE(t.lookup(3, &v));
  EXPECT_EQ(v, 300u);
  t.lookup(0, &v);
  t.lookup(2, &v);
  t.lookup(3, &v);
  t.insert(9, 900);  // evicts page 1, the least recently used
  EXPECT_FALSE(t.lookup(1, &v));
  EXPECT_TRUE(t.lookup(9, &v));
  EXPECT_EQ(v, 900u);
  t.invalidate(9);
  EXPECT_FALSE(t.lookup(9, &v)) << "the most-recent-hit shortcut must not outlive an invalidation";
}

// The node page table (open addressing, backward-shift deletion) against std::unordered_map
// under random inserts, overwrites and erases of clustered keys (seed logged).
TEST(PageTable, MatchesAReferenceMapUnderRandomOperations) {
  const uint64_t seed = 7;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  Rng g(seed, "pagetable");
  mbp::PageTable<int> pt;
  std::unordered_map<uint64_t, int*> ref;
  std::vector<int> vals(1000);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t page = 0x100000000ull + g.below(3000);  // clustered, as real page numbers are
    const auto op = g.below(3);
    if (op == 0) {
      int* v = &vals[g.below(vals.size())];
      pt.put(page, v);
      ref[page] = v;
    } else if (op == 1) {
      pt.erase(page);
      ref.erase(page);
    }
    auto it = ref.find(page);
    ASSERT_EQ(pt.get(page), it == ref.end() ? nullptr : it->second) << "step " << i << " seed " << seed;
  }
  for (uint64_t p = 0x100000000ull; p < 0x100000000ull + 3000; ++p) {
    auto it = ref.find(p);
    ASSERT_EQ(pt.get(p), it == ref.end() ? nullptr : it->second) << "page " << p;
  }
}

}  // namespace
}  // namespace mbpsim
