#include <gtest/gtest.h>

#include "models/core/stats.h"

namespace mbpsim {
namespace {

TEST(Stats, CountersAveragesFormulasNestAndReset) {
  Stats s;
  Counter& c = s.counter("system.a.count");
  Average& a = s.average("system.a.avg");
  s.formula("system.b.twice", [&] { return 2.0 * c.value; });
  c.inc(3);
  a.sample(1);
  a.sample(3);
  auto j = s.dump();
  EXPECT_EQ(j["system"]["a"]["count"], 3);
  EXPECT_DOUBLE_EQ(j["system"]["a"]["avg"]["mean"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["system"]["b"]["twice"].get<double>(), 6.0);
  s.reset();
  j = s.dump();
  EXPECT_EQ(j["system"]["a"]["count"], 0);
  EXPECT_EQ(j["system"]["a"]["avg"]["count"], 0);
}

TEST(Stats, HistogramPercentilesExactForSmallValues) {
  Histogram h;
  for (uint64_t v = 1; v <= 50; ++v) h.sample(v);
  EXPECT_EQ(h.count(), 50u);
  EXPECT_EQ(h.percentile(0.5), 25u);
  EXPECT_EQ(h.percentile(0.9), 45u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), 50u);
  EXPECT_DOUBLE_EQ(h.mean(), 25.5);
}

TEST(Stats, HistogramRelativeErrorBoundedForLargeValues) {
  Histogram h;
  for (uint64_t v = 1000; v < 101000; v += 10) h.sample(v);
  const double p50 = h.percentile(0.5), exact = 51000;
  EXPECT_LE(p50, exact);
  EXPECT_GT(p50, exact * (1 - 1.0 / 16));
  for (size_t b = 0; b < 400; ++b) EXPECT_EQ(Histogram::bucket_of(Histogram::bucket_low(b)), b) << b;
}

TEST(Stats, DuplicateNamesAreRejected) {
  Stats s;
  s.counter("x.y");
  EXPECT_DEATH(s.counter("x.y"), "registered twice");
}

}  // namespace
}  // namespace mbpsim
