#include <cmath>
#include <limits>

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

// Nothing measured prints as null, never as 0: a mean, an extreme or a percentile of no
// sample, and a formula that is not a number (a ratio over nothing). Counts stay 0, and a
// measured 0 stays 0.
TEST(Stats, WhatWasNotMeasuredIsNullNotZero) {
  Stats s;
  Average& a = s.average("m.avg");
  Histogram& h = s.histogram("m.lat_cycles");
  Counter& hits = s.counter("m.hits");
  Counter& lookups = s.counter("m.lookups");
  s.formula("m.hit_rate", [&] { return lookups.value ? static_cast<double>(hits.value) / lookups.value : std::nan(""); });
  s.formula("m.inf", [] { return std::numeric_limits<double>::infinity(); });
  auto j = s.dump();
  EXPECT_EQ(j["m"]["avg"]["count"], 0);
  for (const char* k : {"mean", "min", "max"}) EXPECT_TRUE(j["m"]["avg"][k].is_null()) << k;
  EXPECT_EQ(j["m"]["lat_cycles"]["count"], 0);
  for (const char* k : {"mean", "min", "p50", "p90", "p99", "max"}) EXPECT_TRUE(j["m"]["lat_cycles"][k].is_null()) << k;
  EXPECT_TRUE(j["m"]["hit_rate"].is_null());
  EXPECT_TRUE(j["m"]["inf"].is_null());
  EXPECT_TRUE(figure_json(std::nan("")).is_null());
  // Measured, including a measured 0.
  a.sample(0);
  h.sample(0);
  lookups.inc(4);
  j = s.dump();
  EXPECT_EQ(j["m"]["avg"]["mean"], 0.0);
  EXPECT_EQ(j["m"]["avg"]["min"], 0.0);
  EXPECT_EQ(j["m"]["lat_cycles"]["p50"], 0);
  EXPECT_EQ(j["m"]["lat_cycles"]["max"], 0);
  EXPECT_EQ(j["m"]["hit_rate"], 0.0);
  // The end of warm-up empties them again.
  s.reset();
  j = s.dump();
  EXPECT_TRUE(j["m"]["avg"]["mean"].is_null());
  EXPECT_TRUE(j["m"]["lat_cycles"]["p99"].is_null());
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

// A statistic's unit: the one given at registration, else the one its name declares (a last
// word ps, ns, us or cycles; a word bytes or flits; a count for any other counter), else none.
TEST(Stats, UnitsComeFromTheRegistrationOrTheNamesConvention) {
  EXPECT_EQ(Stats::conventional_unit("system.host1.nic.pme.busy_ps", true), "ps");
  EXPECT_EQ(Stats::conventional_unit("system.mbp.rounds.latency_ps", false), "ps");
  EXPECT_EQ(Stats::conventional_unit("a.kx_time_ns", true), "ns");
  EXPECT_EQ(Stats::conventional_unit("a.stuck_us", true), "us");
  EXPECT_EQ(Stats::conventional_unit("a.idle_cycles", false), "cycles");
  EXPECT_EQ(Stats::conventional_unit("a.tx_bytes", true), "bytes");
  EXPECT_EQ(Stats::conventional_unit("a.bytes_encrypted", true), "bytes");
  EXPECT_EQ(Stats::conventional_unit("system.net.flits_injected", true), "flits");
  EXPECT_EQ(Stats::conventional_unit("a.port0.flits", true), "flits");
  EXPECT_EQ(Stats::conventional_unit("a.ps", true), "count");  // a whole word alone is not a suffix
  EXPECT_EQ(Stats::conventional_unit("a.hops", true), "count");
  EXPECT_EQ(Stats::conventional_unit("a.fanout", false), "");
  Stats s;
  s.counter("x.sent");
  s.histogram("x.latency", "creation to delivery", "cycles");
  s.formula("x.rate", [] { return 0.5; }, "a share");
  s.counter("x.copied_bytes", "", "words");  // the registration wins
  const auto d = s.describe();
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].unit, "count");
  EXPECT_EQ(d[1].unit, "cycles");
  EXPECT_EQ(d[2].unit, "");
  EXPECT_EQ(d[3].unit, "words");
}

}  // namespace
}  // namespace mbpsim
