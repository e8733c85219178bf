// The executable memory model behind the litmus tester (workloads/testers/litmus_model.h):
// its allowed sets must say what docs/ARCHITECTURE.md says, test by test and protocol by
// protocol, or the tester would judge the simulator against the wrong oracle.
#include <gtest/gtest.h>

#include "workloads/testers/litmus_model.h"

namespace mbpsim::litmus {
namespace {

using node::Protocol;
constexpr Protocol I = Protocol::Invalidate, U = Protocol::Update, N = Protocol::NonCacheable;

bool allows(const char* test, std::vector<Protocol> protos, Outcome o) {
  const litmus::Test* t = find(test);
  EXPECT_NE(t, nullptr) << test;
  return t && allowed_outcomes(*t, protos).count(o) > 0;
}

TEST(LitmusModel, CatalogueHasTheElevenTests) {
  std::vector<std::string> names;
  for (const litmus::Test& t : catalogue()) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"SB", "SB+fences", "MP", "MP+fence", "LB", "IRIW", "IRIW+fences",
                                             "2+2W", "2+2W+fences", "CoRR", "CoWW"}));
  EXPECT_EQ(find("nope"), nullptr);
}

TEST(LitmusModel, InvalidatePagesAreSequentiallyConsistent) {
  for (const litmus::Test& t : catalogue())
    EXPECT_EQ(allowed_outcomes(t, std::vector<Protocol>(t.locs, I)), sc_outcomes(t)) << t.name;
  const litmus::Test& sb = *find("SB");
  EXPECT_EQ(sc_outcomes(sb), (std::set<Outcome>{{0, 1}, {1, 0}, {1, 1}}));
}

TEST(LitmusModel, WriteBufferAllowsStoreLoadAndStoreStoreReordering) {
  for (Protocol p : {U, N}) {
    EXPECT_TRUE(allows("SB", {p, p}, {0, 0}));
    EXPECT_FALSE(allows("SB+fences", {p, p}, {0, 0}));
    EXPECT_TRUE(allows("MP", {p, p}, {1, 0}));
    EXPECT_FALSE(allows("MP+fence", {p, p}, {1, 0}));
    EXPECT_TRUE(allows("2+2W", {p, p}, {1, 1}));
    EXPECT_FALSE(allows("2+2W+fences", {p, p}, {1, 1}));
  }
  EXPECT_FALSE(allows("SB", {I, I}, {0, 0}));
  EXPECT_FALSE(allows("MP", {I, I}, {1, 0}));
}

TEST(LitmusModel, LoadsAreInOrderAndCoherenceHoldsEverywhere) {
  for (Protocol p : {I, U, N}) {
    EXPECT_FALSE(allows("LB", {p, p}, {1, 1})) << node::to_string(p);
    EXPECT_FALSE(allows("CoRR", {p}, {1, 0})) << node::to_string(p);
    EXPECT_TRUE(allows("CoRR", {p}, {0, 1}));
    EXPECT_EQ(allowed_outcomes(*find("CoWW"), {p}), (std::set<Outcome>{{2}})) << node::to_string(p);
  }
}

TEST(LitmusModel, OnlyUpdatePagesAreNotMultiCopyAtomic) {
  const Outcome split = {1, 0, 1, 0};
  EXPECT_TRUE(allows("IRIW", {U, U}, split));
  EXPECT_TRUE(allows("IRIW+fences", {U, U}, split));  // a fence orders only its own stores
  EXPECT_FALSE(allows("IRIW", {N, N}, split));
  EXPECT_FALSE(allows("IRIW", {I, I}, split));
  // One location whose stores are not atomic is enough.
  EXPECT_TRUE(allows("IRIW", {U, I}, split));
  EXPECT_FALSE(allows("IRIW", {N, I}, split));
}

TEST(LitmusModel, AnInvalidateStoreDoesNotWaitForBufferedStores) {
  // MP with the data on an update page and the flag on an invalidate page: the flag is
  // performed at once, the data may still be buffered.
  EXPECT_TRUE(allows("MP", {U, I}, {1, 0}));
  // The other way round, the data is performed before the flag is even buffered.
  EXPECT_FALSE(allows("MP", {I, U}, {1, 0}));
  EXPECT_TRUE(allows("SB", {U, I}, {0, 0}));
  EXPECT_FALSE(allows("SB", {I, I}, {0, 0}));
}

TEST(LitmusModel, FormatNamesRegistersAndFinals) {
  EXPECT_EQ(format(*find("SB"), {0, 1}), "r0=0 r1=1");
  EXPECT_EQ(format(*find("2+2W"), {1, 2}), "x=1 y=2");
}

}  // namespace
}  // namespace mbpsim::litmus
