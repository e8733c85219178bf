// The three directory formats (thesis 2.5) on the 16- and 64-node quad-trees.
#include <gtest/gtest.h>

#include "models/mbp/directory.h"

namespace mbpsim::mbp {
namespace {

using net::TreeTopology;

// Figure 2.6: S = node 4; A, B = 5, 6 under T2; H, I, J, K = 8..11 under T3.
TEST(Directory, HierarchicalBitmapOfFigure26CoversJ) {
  TreeTopology t(4, 2);
  DirectoryFormats d(t, 4, 4);
  SharerSet s;
  d.init(s, DirFormat::HierBitmap);
  for (uint32_t n : {5, 6, 8, 9, 11}) d.add(s, 4, n);
  EXPECT_EQ(s.hb.level[1], 0b0110);  // at T2: A and B
  EXPECT_EQ(s.hb.level[0], 0b0100);  // at T0: the T3 subtree
  const Delivery p = d.plan(s, 4);
  EXPECT_TRUE(p.multicast);
  EXPECT_EQ(p.targets, 6u);
  EXPECT_EQ(d.covered(s, 4), (std::vector<uint32_t>{5, 6, 8, 9, 10, 11}));
  EXPECT_TRUE(d.may_contain(s, 4, 10));   // J: imprecision
  EXPECT_FALSE(d.may_contain(s, 4, 12));
  d.add(s, 4, 4);                         // the home itself is never enrolled
  EXPECT_EQ(d.plan(s, 4).targets, 6u);
}

TEST(Directory, PointersArePreciseThenOverflowIntoABitmap) {
  TreeTopology t(4, 3);
  DirectoryFormats d(t, 2, 4);
  SharerSet s;
  d.init(s, DirFormat::Pointers);
  EXPECT_TRUE(d.empty(s));
  EXPECT_FALSE(d.add(s, 0, 63));
  EXPECT_FALSE(d.add(s, 0, 17));
  EXPECT_FALSE(d.add(s, 0, 17));  // already there
  Delivery p = d.plan(s, 0);
  EXPECT_FALSE(p.multicast);
  EXPECT_EQ(p.unicasts, (std::vector<uint32_t>{17, 63}));
  EXPECT_EQ(d.plan(s, 0, 63).unicasts, (std::vector<uint32_t>{17})) << "the exclusive requester is left out";
  EXPECT_TRUE(d.add_coarsens(s, 0, 40));
  EXPECT_FALSE(d.add_coarsens(s, 0, 17));
  EXPECT_TRUE(d.add(s, 0, 40)) << "the third sharer overflows two pointers";
  EXPECT_TRUE(s.overflowed);
  p = d.plan(s, 0);
  EXPECT_TRUE(p.multicast);
  // 17 -> subtree 1 (16 nodes), 40 -> subtree 2, 63 -> subtree 3 at the root: 48 nodes.
  EXPECT_EQ(p.targets, 48u);
  d.clear(s);
  EXPECT_TRUE(d.empty(s));
  EXPECT_FALSE(s.overflowed);
}

TEST(Directory, FullMapPicksTheCheaperDelivery) {
  TreeTopology t(4, 3);
  DirectoryFormats d(t, 4, 3);
  SharerSet s;
  d.init(s, DirFormat::FullMap);
  for (uint32_t n : {1, 2, 3}) d.add(s, 0, n);  // exactly the home's leaf siblings
  Delivery p = d.plan(s, 0);
  EXPECT_TRUE(p.multicast) << "the bitmap reaches no one else: multicast with combining";
  EXPECT_EQ(p.targets, 3u);
  d.clear(s);
  for (uint32_t n : {20, 50}) d.add(s, 0, n);  // scattered: a bitmap would reach 32 nodes
  p = d.plan(s, 0);
  EXPECT_FALSE(p.multicast);
  EXPECT_EQ(p.unicasts, (std::vector<uint32_t>{20, 50}));
  for (uint32_t n : {21, 51}) d.add(s, 0, n);  // four scattered sharers: above the unicast limit
  p = d.plan(s, 0);
  EXPECT_TRUE(p.multicast);
  EXPECT_EQ(p.targets, 32u);
  EXPECT_FALSE(d.may_contain(s, 0, 22));  // exact membership
  EXPECT_TRUE(d.may_contain(s, 0, 51));
}

TEST(Directory, EntrySizes) {
  TreeTopology t(4, 3);
  DirectoryFormats d(t, 4, 4);
  EXPECT_EQ(d.entry_bits(DirFormat::HierBitmap), 9u);  // (k-1) bits per level without the X bit
  EXPECT_EQ(d.entry_bits(DirFormat::FullMap), 64u);
  EXPECT_EQ(d.entry_bits(DirFormat::Pointers), 1u + 4u * 6u);
}

}  // namespace
}  // namespace mbpsim::mbp
