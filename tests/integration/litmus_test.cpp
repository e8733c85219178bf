// The memory-model litmus tester run as users run it (mbpsim on configs/litmus-mbp16.json):
// from 2 to 64 nodes, small caches, several seeds: no forbidden outcome, no value from another
// run, and the relaxed outcomes that are easy to provoke are observed (the tester can see
// relaxed behaviour at all). Bad litmus settings are one-line errors.
#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace mbpsim {
namespace {

using nlohmann::json;

struct LitmusCase {
  const char* name;
  uint64_t seed;
  const char* sets;
};

class Litmus : public ::testing::TestWithParam<LitmusCase> {};

// Under the sanitizers (about thirty times slower) a third of the runs: every check below holds
// for the first 20 runs of each case as for 60 (the runs are deterministic), and the sanitizers
// look at the same code either way.
#ifdef MBPSIM_TEST_ASAN
constexpr int kLitmusRuns = 20;
#else
constexpr int kLitmusRuns = 60;
#endif

TEST_P(Litmus, EveryOutcomeIsAllowedByTheMemoryModel) {
  const auto c = GetParam();
  const auto r = test::run_config("litmus-mbp16.json", "--set litmus.runs=" + std::to_string(kLitmusRuns) + " --seed " +
                                                       std::to_string(c.seed) + " " + c.sets);
  ASSERT_EQ(r.status, 0) << "seed " << c.seed << "\n" << r.output;
  const json s = r.summary();
  EXPECT_EQ(s["runs"], kLitmusRuns * 11 * 4) << "seed " << c.seed;
  EXPECT_EQ(s["forbidden_outcomes"], 0) << "seed " << c.seed;
  EXPECT_EQ(s["values_from_other_runs"], 0) << "seed " << c.seed;
  EXPECT_EQ(s["relaxed_allowed"], 8);
  // Store->load reordering through the write buffer shows up within a few runs.
  EXPECT_EQ(s["tests"]["SB"]["update"]["relaxed_observed"], json::array({"r0=0 r1=0"})) << "seed " << c.seed;
  EXPECT_EQ(s["tests"]["SB"]["invalidate"]["outcomes"].count("r0=0 r1=0"), 0u);
  uint64_t n = 0;
  for (auto& [k, v] : s["tests"]["CoWW"]["update"]["outcomes"].items()) {
    EXPECT_EQ(k, "x=2");
    n += v.get<uint64_t>();
  }
  EXPECT_EQ(n, static_cast<uint64_t>(kLitmusRuns));
}

INSTANTIATE_TEST_SUITE_P(
    Systems, Litmus,
    ::testing::Values(LitmusCase{"n2", 1, "--set network.radix=2 --set network.levels=1"},
                      LitmusCase{"n16_s1", 1, ""}, LitmusCase{"n16_s2", 2, ""},
                      LitmusCase{"n16_q5", 3, "--set node.quantum_ns=5 --set litmus.noise=0"},
                      LitmusCase{"n64", 4, "--set network.radix=4 --set network.levels=3 --set node.procs=1"},
                      LitmusCase{"n16_small_caches", 5,
                                 "--set node.l1_bytes=128 --set node.l2_bytes=256 --set node.l2_assoc=2 "
                                 "--set node.l3_pages=1 --set mbp.ctlb_entries=2 --set mbp.ctlb_assoc=1 "
                                 "--set litmus.pages=1"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(LitmusInput, UnknownTestOrProtocolIsAOneLineError) {
  for (const std::string set : {"--set 'litmus.tests=[\"SB\",\"XYZ\"]'", "--set 'litmus.protocols=[\"writeback\"]'",
                                "--set 'litmus.tests=[]'"}) {
    auto d = test::temp_dir("litmus_bad");
    const auto r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("litmus-mbp16.json") + " --quiet " +
                                 set + " --out " + d.string());
    EXPECT_EQ(r.status, 1) << set << "\n" << r.output;
    EXPECT_NE(r.output.find("litmus."), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("--set"), std::string::npos) << r.output;  // where the value came from
    EXPECT_FALSE(std::filesystem::exists(d / "stats.json"));
    std::filesystem::remove_all(d);
  }
}

TEST(LitmusInput, TooFewProcessorsForATestIsAnError) {
  auto d = test::temp_dir("litmus_small");
  const auto r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("litmus-mbp16.json") +
                               " --quiet --set network.radix=2 --set network.levels=1 --set node.procs=1 --out " + d.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("IRIW needs 4 processors"), std::string::npos) << r.output;
  std::filesystem::remove_all(d);
}

}  // namespace
}  // namespace mbpsim
