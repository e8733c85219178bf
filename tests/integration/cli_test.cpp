// The mbpsim command line as a user meets it: exit statuses, one-line errors, outputs.
#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace mbpsim {
namespace {

using test::run_cmd;

int count_lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(Cli, MalformedJsonExitsOneWithOneLine) {
  auto d = test::temp_dir("cli_badjson");
  test::write_text(d / "c.json", "{ \"network\": { \"radix\": 4 ");
  auto r = run_cmd(test::mbpsim_bin() + " run " + (d / "c.json").string() + " --out " + (d / "o").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find("c.json:1:"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(d / "o")) << "no partial output on bad input";
}

TEST(Cli, UnknownKeySuggestsNearest) {
  auto d = test::temp_dir("cli_unknown");
  test::write_text(d / "c.json", R"({"workload": {"injection_rat": 0.1}})");
  auto r = run_cmd(test::mbpsim_bin() + " run " + (d / "c.json").string() + " --out " + (d / "o").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find("workload.injection_rat: unknown parameter (did you mean 'workload.injection_rate'?)"), std::string::npos) << r.output;
}

TEST(Cli, BadSetAndBadArguments) {
  const std::string cfg = test::config_path("fig2-7-multicast.json");
  for (const std::string& args : std::vector<std::string>
       {"run " + cfg + " --set network.radix=zero", "run " + cfg + " --set nosuch.key=1",
        "run " + cfg + " --set network.levels=13", "run " + cfg + " --seed -3",
        "run " + cfg + " --bogus", "run", "frobnicate", "run /nonexistent.json",
        "validate " + cfg + " --set workload.script=[]", "params nosuchprefix"}) {
    auto r = run_cmd(test::mbpsim_bin() + " " + args + " --out /tmp/mbpsim_never_written");
    EXPECT_EQ(r.status, 1) << args << ": " << r.output;
    EXPECT_NE(r.output.find("mbpsim: "), std::string::npos) << args << ": " << r.output;
    EXPECT_EQ(r.output.find("Abort"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists("/tmp/mbpsim_never_written"));
}

// A receiver that never acknowledges leaves the multicast open: the watchdog stops the run
// with exit status 2, the seed and the oldest open transaction (T3 holds the other three acks,
// so none of the five receivers reached through the bitmap is acknowledged at the source).
TEST(Cli, SimulatedFailureExitsTwoWithDump) {
  auto d = test::temp_dir("cli_wd");
  test::write_text(d / "c.json", R"({"network": {"levels": 2, "watchdog_cycles": 200},
    "workload": {"kind": "script", "measure_cycles": 10, "drain_cycles": 5000,
                 "script": [{"src": 4, "dests": [5, 9], "silent": [9]}]}})");
  auto r = run_cmd(test::mbpsim_bin() + " run " + (d / "c.json").string() + " --seed 7 --out " + (d / "o").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("network watchdog"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("seed 7"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("multicast txn 1 from node 4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("5 receivers not yet acknowledged"), std::string::npos) << r.output;
}

TEST(Cli, ParamsAndValidate) {
  auto r = run_cmd(test::mbpsim_bin() + " params network.");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("network.radix"), std::string::npos);
  EXPECT_NE(r.output.find("network.combining_entries"), std::string::npos);
  EXPECT_EQ(r.output.find("workload."), std::string::npos);
  r = run_cmd(test::mbpsim_bin() + " validate " + test::config_path("net-qtree64-uniform.json"));
  EXPECT_EQ(r.status, 0) << r.output;
}

TEST(Cli, OutputsAndDeterminism) {
  auto d = test::temp_dir("cli_det");
  const std::string base = test::mbpsim_bin() + " run " + test::config_path("default.json") +
                           " --quiet --set workload.measure_cycles=3000 --out ";
  auto r1 = run_cmd(base + (d / "a").string());
  auto r2 = run_cmd(base + (d / "b").string());
  auto r3 = run_cmd(base + (d / "c").string() + " --seed 99");
  ASSERT_EQ(r1.status, 0) << r1.output;
  ASSERT_EQ(r2.status, 0);
  ASSERT_EQ(r3.status, 0);
  const std::string a = test::read_text(d / "a" / "stats.json");
  EXPECT_EQ(a, test::read_text(d / "b" / "stats.json")) << "same config and seed: identical stats";
  EXPECT_NE(a, test::read_text(d / "c" / "stats.json")) << "another seed: other traffic";
  auto st = nlohmann::json::parse(a);
  for (const char* k : {"offered_rate", "accepted_rate", "avg_latency_cycles", "packets_delivered"})
    EXPECT_TRUE(st["summary"].contains(k)) << k;
  auto host = nlohmann::json::parse(test::read_text(d / "a" / "host.json"));
  for (const char* k : {"wall_seconds", "events_per_second", "peak_memory_bytes"})
    EXPECT_TRUE(host.contains(k)) << k;
  EXPECT_FALSE(st.contains("wall_seconds"));
  auto rc = nlohmann::json::parse(test::read_text(d / "a" / "config.resolved.json"));
  EXPECT_EQ(rc["workload"]["measure_cycles"], 3000);
  EXPECT_EQ(rc["network"]["buffer_depth"], 8);
  EXPECT_EQ(rc["experiment"]["seed"], 1);
}

// An idle network still simulates the requested time.
TEST(Cli, ZeroLoadRunReportsSimulatedTime) {
  auto d = test::temp_dir("cli_zero");
  auto r = run_cmd(test::mbpsim_bin() + " run " + test::config_path("net-qtree64-uniform.json") +
                   " --quiet --set workload.injection_rate=0 --set workload.warmup_cycles=100"
                   " --set workload.measure_cycles=900 --out " + d.string());
  ASSERT_EQ(r.status, 0) << r.output;
  auto st = nlohmann::json::parse(test::read_text(d / "stats.json"));
  EXPECT_EQ(st["run"]["simulated_cycles"], 1000);
  EXPECT_EQ(st["summary"]["packets_delivered"], 0);
  EXPECT_FALSE(st["summary"]["saturated"].get<bool>());
}

}  // namespace
}  // namespace mbpsim
