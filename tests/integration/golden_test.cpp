// Golden regression: every config in configs/ runs with a short window (tests/golden/windows.json)
// and its stats.json must equal the checked-in tests/golden/<config>.stats.json. Every
// statistic is deterministic (same config and seed, same bytes), so any difference is a change
// of behaviour: either a regression, or an intended change to re-bless with
//   scripts/golden.sh bless
// (which runs these tests with MBPSIM_GOLDEN_BLESS=1: they write the files instead of comparing).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
namespace test = mbpsim::test;

const fs::path kGolden = fs::path(MBPSIM_SOURCE_DIR) / "tests" / "golden";

std::vector<std::string> config_names() {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(fs::path(MBPSIM_SOURCE_DIR) / "configs"))
    if (e.path().extension() == ".json") v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}

// Every path at which `want` and `got` differ (up to `limit`). Integers compare exactly;
// floating-point values to a relative 1e-12 (the same binary gives the same bits; the slack
// only forgives a last-digit difference of the printed form).
void diff(const json& want, const json& got, const std::string& at, std::vector<std::string>& out,
          size_t limit) {
  if (out.size() >= limit) return;
  if (want.is_object() && got.is_object()) {
    for (auto it = want.begin(); it != want.end(); ++it) {
      if (!got.contains(it.key())) out.push_back(at + "." + it.key() + ": missing (golden " + it.value().dump() + ")");
      else diff(it.value(), got[it.key()], at + "." + it.key(), out, limit);
    }
    for (auto it = got.begin(); it != got.end(); ++it)
      if (!want.contains(it.key())) out.push_back(at + "." + it.key() + ": new (" + it.value().dump() + ")");
    return;
  }
  if (want.is_array() && got.is_array() && want.size() == got.size()) {
    for (size_t i = 0; i < want.size(); ++i) diff(want[i], got[i], at + "[" + std::to_string(i) + "]", out, limit);
    return;
  }
  if (want.is_number_float() || got.is_number_float()) {
    if (want.is_number() && got.is_number()) {
      const double a = want.get<double>(), b = got.get<double>();
      if (a == b || std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b))) return;
    }
  } else if (want == got) {
    return;
  }
  out.push_back(at + ": golden " + want.dump() + ", now " + got.dump());
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, StatsEqualTheCheckedInRun) {
  const std::string name = GetParam();
  const json windows = json::parse(test::read_text(kGolden / "windows.json"));
  std::string sets;
  if (windows.contains(name))
    for (const auto& s : windows[name]) sets += " --set '" + s.get<std::string>() + "'";
  const auto dir = test::temp_dir("golden");
  const auto r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path(name) + sets +
                               " --quiet --out " + (dir / "out").string());
  ASSERT_EQ(r.status, 0) << r.output;
  // Statistics that name an input file hold its path: make it independent of the checkout.
  std::string got_text = test::read_text(dir / "out" / "stats.json");
  for (size_t at; (at = got_text.find(MBPSIM_SOURCE_DIR)) != std::string::npos;)
    got_text.replace(at, std::strlen(MBPSIM_SOURCE_DIR), "<source>");
  // The provenance (the version, the command) says which build and command made the run, not
  // what it did: a new commit must not change the golden files.
  {
    nlohmann::ordered_json g = nlohmann::ordered_json::parse(got_text);
    ASSERT_TRUE(g.contains("provenance")) << "stats.json has no provenance";
    g.erase("provenance");
    got_text = g.dump(2) + "\n";
  }
  const fs::path golden = kGolden / (fs::path(name).stem().string() + ".stats.json");
  if (std::getenv("MBPSIM_GOLDEN_BLESS")) {
    test::write_text(golden, got_text);
    std::printf("blessed %s\n", golden.string().c_str());
    return;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden << " is missing: a new config needs `scripts/golden.sh bless`";
  std::vector<std::string> d;
  diff(json::parse(test::read_text(golden)), json::parse(got_text), "", d, 25);
  std::string msg;
  for (const auto& s : d) msg += "  " + s + "\n";
  EXPECT_TRUE(d.empty()) << name << ": stats differ from " << golden.filename() << " (first " << d.size()
                         << " differences; re-bless with scripts/golden.sh bless if intended):\n" << msg;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& i) {
  std::string s = fs::path(i.param).stem().string();
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Configs, Golden, ::testing::ValuesIn(config_names()), test_name);

// The comparison itself: a changed counter, a missing and a new statistic are all reported.
TEST(GoldenDiff, ReportsChangedMissingAndNewStatistics) {
  const json want = json::parse(R"({"a":{"b":1,"c":2.5,"d":[1,2]},"e":3})");
  std::vector<std::string> d;
  diff(want, want, "", d, 25);
  EXPECT_TRUE(d.empty());
  const json got = json::parse(R"({"a":{"b":2,"c":2.5000001,"d":[1,3]},"f":3})");
  diff(want, got, "", d, 25);
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0], ".a.b: golden 1, now 2");
  EXPECT_NE(d[1].find(".a.c"), std::string::npos);
  EXPECT_EQ(d[2], ".a.d[1]: golden 2, now 3");
  EXPECT_NE(d[3].find(".e: missing"), std::string::npos);
  EXPECT_NE(d[4].find(".f: new"), std::string::npos);
}

}  // namespace
