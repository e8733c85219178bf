#include <gtest/gtest.h>

#include "models/net/topology.h"

namespace mbpsim::net {
namespace {

TEST(Topology, SizesAndIds) {
  TreeTopology t16(4, 2), t64(4, 3), t4096(4, 6);
  EXPECT_EQ(t16.nodes(), 16u);
  EXPECT_EQ(t16.num_routers(), 5);  // T0 and T1..T4 of Figure 2.5
  EXPECT_EQ(t64.num_routers(), 21);
  EXPECT_EQ(t4096.nodes(), 4096u);
  EXPECT_EQ(t4096.num_routers(), 1365);
  EXPECT_EQ(t64.height_of(0), 0);
  EXPECT_EQ(t64.height_of(4), 1);
  EXPECT_EQ(t64.height_of(5), 2);
  EXPECT_EQ(t64.pos_of(20), 15u);
}

TEST(Topology, NearestCommonAncestor) {
  TreeTopology t(4, 3);
  EXPECT_EQ(t.routers_on_path(0, 0), 1);
  EXPECT_EQ(t.routers_on_path(0, 3), 1);
  EXPECT_EQ(t.routers_on_path(0, 4), 3);
  EXPECT_EQ(t.routers_on_path(0, 15), 3);
  EXPECT_EQ(t.routers_on_path(0, 16), 5);
  EXPECT_EQ(t.routers_on_path(63, 0), 5);
  EXPECT_EQ(t.child_index(37, 0), 2);  // 37 = 2*16 + 1*4 + 1
  EXPECT_EQ(t.child_index(37, 1), 1);
  EXPECT_EQ(t.child_index(37, 2), 1);
  EXPECT_TRUE(t.in_subtree(37, t.router_id(1, 2)));
  EXPECT_FALSE(t.in_subtree(37, t.router_id(1, 1)));
}

// Figure 2.7: S (node 4, under T2) multicasts to A, B (5, 6, under T2) and H, I, K (8, 9, 11,
// under T3). The T2 bitmap selects A and B; the T0 bitmap selects the third link (T3) only.
TEST(Topology, Figure27BitmapAndItsImprecision) {
  TreeTopology t(4, 2);
  HierBitmap bm = encode_bitmap(t, 4, {5, 6, 8, 9, 11});
  EXPECT_EQ(bm.level[1], 0b0110);  // at T2: children 1 (A) and 2 (B)
  EXPECT_EQ(bm.level[0], 0b0100);  // at T0: child 2 = T3
  EXPECT_EQ(covered_nodes(t, 4, bm), (std::vector<uint32_t>{5, 6, 8, 9, 10, 11}));  // + J
}

TEST(Topology, BitmapNeverSelectsTheSourceLink) {
  TreeTopology t(4, 3);
  HierBitmap bm = encode_bitmap(t, 21, {21, 20, 22, 63});
  EXPECT_EQ(bm.level[2], 0b0101);  // 20 and 22 share the leaf router; 21 itself is dropped
  EXPECT_EQ(bm.level[1], 0);
  EXPECT_EQ(bm.level[0], 0b1000);  // 63 lies in the fourth top-level subtree
  const auto cov = covered_nodes(t, 21, bm);
  EXPECT_EQ(cov.size(), 2u + 16u);
  EXPECT_EQ(std::count(cov.begin(), cov.end(), 21u), 0);
}

}  // namespace
}  // namespace mbpsim::net
