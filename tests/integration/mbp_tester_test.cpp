// The value-checking random tester on the MBP system, run as users run it (the mbpsim binary
// on configs/mbp16-random-tester.json), from 2 to 64 nodes with fixed seeds; bad MBP input.
#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace mbpsim {
namespace {

using nlohmann::json;

struct TesterRun {
  int status;
  std::string output;
  json stats;
};

TesterRun run_tester(const std::string& sets, const std::string& tag) {
  const auto r = test::run_config("mbp16-random-tester.json", sets);
  return TesterRun{r.status, tag + ": " + r.command + "\n" + r.output, r.status == 0 ? r.stats : json()};
}

struct TesterCase {
  const char* name;
  int radix, levels;
  uint64_t seed;
  const char* sets;
};

class Tester : public ::testing::TestWithParam<TesterCase> {};

TEST_P(Tester, EveryCheckPasses) {
  const auto c = GetParam();
  const std::string sets = "--set network.radix=" + std::to_string(c.radix) + " --set network.levels=" +
                           std::to_string(c.levels) + " --seed " + std::to_string(c.seed) +
                           " --set tester.checks=1500 " + c.sets;
  const TesterRun r = run_tester(sets, c.name);
  ASSERT_EQ(r.status, 0) << "seed " << c.seed << "\n" << r.output;
  const json& s = r.stats["summary"];
  EXPECT_EQ(s["checks_completed"], 1500) << "seed " << c.seed;
  EXPECT_EQ(s["check_failures"], 0) << "seed " << c.seed << "\n" << r.output;
  EXPECT_TRUE(s["finished"].get<bool>());
  if (std::string(c.sets).empty()) {  // the mixed configuration exercises every online checker
    const json& ck = r.stats["stats"]["system"]["mbp"]["checkers"];
    EXPECT_GT(ck["swmr_checks"].get<int>(), 0);
    EXPECT_GT(ck["value_checks"].get<int>(), 0);
    EXPECT_GT(ck["update_copy_checks"].get<int>(), 0);
  }
}

const char* kMixed = "";
const char* kHarsh =
    "--set node.l1_bytes=128 --set node.l2_bytes=256 --set node.l2_assoc=2 --set node.ptlb_entries=2 "
    "--set node.ptlb_assoc=2 --set node.l3_pages=1 --set mbp.ctlb_entries=2 --set mbp.ctlb_assoc=1 --set mbp.ntlb_entries=2 "
    "--set mbp.ntlb_assoc=2 --set tester.pages=2 --set tester.active=32 --set tester.switch_every=5 --set tester.max_gap=3";

INSTANTIATE_TEST_SUITE_P(
    NodeCounts, Tester,
    ::testing::Values(TesterCase{"n2_s1", 2, 1, 1, kMixed}, TesterCase{"n2_s2", 2, 1, 2, kHarsh},
                      TesterCase{"n4_s1", 4, 1, 1, kMixed}, TesterCase{"n4_s3", 4, 1, 3, kHarsh},
                      TesterCase{"n8_s4", 2, 3, 4, kMixed}, TesterCase{"n16_s1", 4, 2, 1, kMixed},
                      TesterCase{"n16_s2", 4, 2, 2, kHarsh}, TesterCase{"n16_s5", 4, 2, 5, kMixed},
                      TesterCase{"n64_s1", 4, 3, 1, kMixed}, TesterCase{"n64_s2", 4, 3, 2, kHarsh},
                      TesterCase{"n16_inval_hbitmap", 4, 2, 7,
                                 "--set mbp.protocol_mix=[1,0,0] --set mbp.format_mix=[1,0,0] --set tester.switch_every=0"},
                      TesterCase{"n16_update_pointers", 4, 2, 8,
                                 "--set mbp.protocol_mix=[0,1,0] --set mbp.format_mix=[0,1,0] --set tester.switch_every=0"},
                      TesterCase{"n16_nc_fullmap", 4, 2, 9,
                                 "--set mbp.protocol_mix=[0,0,1] --set mbp.format_mix=[0,0,1] --set tester.switch_every=0"},
                      TesterCase{"n16_8byte_blocks", 4, 2, 12,
                                 "--set node.block_bytes=8 --set node.bank_interleave_bytes=8 --set tester.atomic_fraction=0.6"},
                      TesterCase{"n16_128byte_blocks", 4, 2, 13,
                                 "--set node.block_bytes=128 --set network.buffer_depth=18"},
                      TesterCase{"n64_fullmap_switching", 4, 3, 10,
                                 "--set mbp.format_mix=[0,0,1] --set tester.switch_every=3"}),
    [](const ::testing::TestParamInfo<TesterCase>& i) { return std::string(i.param.name); });

TEST(TesterRuns, SameSeedSameStatsOtherSeedOtherStats) {
  auto d = test::temp_dir("tester_det");
  auto run = [&](const std::string& out, int seed) {
    auto r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("mbp16-random-tester.json") +
                           " --quiet --set tester.checks=500 --seed " + std::to_string(seed) + " --out " + (d / out).string());
    EXPECT_EQ(r.status, 0) << r.output;
    return test::read_text(d / out / "stats.json");
  };
  const std::string a = run("a", 3), b = run("b", 3), c = run("c", 4);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::filesystem::remove_all(d);
}

TEST(TesterRuns, WatchdogStopsWithSeedAndOldestOperations) {
  // A 1 us limit is shorter than a remote miss on 64 nodes: the watchdog must fire.
  const TesterRun r = run_tester("--set network.levels=3 --set mbp.watchdog_ns=1000 --seed 11", "watchdog");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("watchdog: a processor operation has waited"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("seed 11"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("waiting since"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("block state at node"), std::string::npos) << r.output;
}

struct BadCase {
  const char* name;
  const char* sets;
  const char* expect;
};

class BadMbpInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadMbpInput, OneLineNamingTheFileAndKeyExitOne) {
  const auto c = GetParam();
  auto d = test::temp_dir(std::string("badmbp_") + c.name);
  auto r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("mbp16-random-tester.json") + " --quiet " +
                         c.sets + " --out " + (d / "out").string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find(c.expect), std::string::npos) << r.output;
  EXPECT_EQ(test::count_lines(r.output), 1) << r.output;
  EXPECT_FALSE(std::filesystem::exists(d / "out")) << "no partial output";
  std::filesystem::remove_all(d);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadMbpInput,
    ::testing::Values(
        BadCase{"region_key", "--set 'mbp.regions=[{\"base\":0,\"bytes\":4096,\"proto\":\"update\"}]'",
                "mbp.regions[0]: unknown key \"proto\""},
        BadCase{"region_protocol", "--set 'mbp.regions=[{\"base\":0,\"bytes\":4096,\"protocol\":\"write-once\"}]'",
                "mbp.regions[0].protocol: must be invalidate, update or noncacheable"},
        BadCase{"mix", "--set mbp.protocol_mix=[1,2]", "mbp.protocol_mix: must be a list of three weights"},
        BadCase{"block_pow2", "--set node.block_bytes=48", "node.block_bytes: must be a power of two, not 48"},
        BadCase{"buffer_depth", "--set node.block_bytes=64",
                "network.buffer_depth: multicast updates of 10 flits"},
        BadCase{"l1_larger", "--set node.l1_bytes=2097152", "node.l1_bytes: L1 must not be larger than L2"},
        BadCase{"active", "--set tester.pages=1 --set tester.active=500", "tester.active: more concurrent checks"},
        BadCase{"script_op",
                "--set workload.kind=mbp_script --set 'workload.mbp_script=[{\"node\":1,\"op\":\"jump\",\"addr\":0}]'",
                "workload.mbp_script: step 0: unknown op \"jump\""},
        BadCase{"script_node",
                "--set workload.kind=mbp_script --set 'workload.mbp_script=[{\"node\":99,\"op\":\"load\",\"addr\":0}]'",
                "step 0: node 99 does not exist (16 nodes)"},
        BadCase{"script_cross",
                "--set workload.kind=mbp_script --set 'workload.mbp_script=[{\"node\":1,\"op\":\"load\",\"addr\":30,\"size\":8}]'",
                "must stay inside one 32-byte block"}),
    [](const ::testing::TestParamInfo<BadCase>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace mbpsim
