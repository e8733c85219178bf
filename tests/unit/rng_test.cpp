#include <gtest/gtest.h>

#include <cmath>

#include "models/core/rng.h"

namespace mbpsim {
namespace {

TEST(Rng, StreamsAreDeterministicAndIndependentByName) {
  Rng a(7, "system.node1"), b(7, "system.node1"), c(7, "system.node2"), d(8, "system.node1");
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    EXPECT_NE(x, c.next());
    EXPECT_NE(x, d.next());
  }
}

TEST(Rng, BelowIsInRangeAndRoughlyUniform) {
  Rng r(1, "t");
  std::vector<int> hist(10, 0);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = r.below(10);
    ASSERT_LT(v, 10u);
    ++hist[v];
  }
  for (int h : hist) EXPECT_NEAR(h, 10000, 500);
}

TEST(Rng, GeometricMatchesBernoulliMean) {
  Rng r(3, "g");
  for (double p : {0.01, 0.2, 0.9}) {
    double sum = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) {
      const uint64_t g = r.geometric(p);
      ASSERT_GE(g, 1u);
      sum += g;
    }
    EXPECT_NEAR(sum / n, 1 / p, 0.02 / p) << p;
  }
  EXPECT_EQ(r.geometric(1.0), 1u);
}

}  // namespace
}  // namespace mbpsim
