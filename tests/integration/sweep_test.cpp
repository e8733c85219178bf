// `mbpsim sweep` and `mbpsim plot` (sim/README.md, "Sweeps" and "Plots"), the command line's
// help and version, and the provenance a run records. Every sweep here runs the real program on
// the BookSim cross-validation config, whose points take a tenth of a second.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;
namespace test = mbpsim::test;

namespace {

const std::string kNet = test::config_path("net-qtree64-booksim.json");
// Short windows: a point is a few thousand cycles.
const std::string kShort = " --set workload.warmup_cycles=500 --set workload.measure_cycles=2000 ";

test::CmdResult sweep(const std::string& args) { return test::run_cmd(test::mbpsim_bin() + " sweep " + args); }

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream is(text);
  for (std::string l; std::getline(is, l);) v.push_back(l);
  return v;
}

json table(const fs::path& dir, const std::string& stem = "sweep") { return json::parse(test::read_text(dir / (stem + ".json"))); }

}  // namespace

TEST(Sweep, AGridAndSeedsGiveOneRowPerPointWithThatPointsSummary) {
  const auto d = test::temp_dir("sweep_grid");
  const auto r = sweep(kNet + kShort + "--grid workload.injection_rate=0.01:0.02:0.03 --grid 'network.combining=[true,false]' --seed 1,7 --jobs 2 --quiet --out " +
                       (d / "s").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const json t = table(d / "s");
  ASSERT_EQ(t["rows"].size(), 8u);  // 2 rates x 2 x 2 seeds
  // The first axis varies slowest, seeds fastest.
  const std::vector<std::tuple<double, bool, int>> want = {{0.01, true, 1}, {0.01, true, 7}, {0.01, false, 1}, {0.01, false, 7},
                                                           {0.03, true, 1}, {0.03, true, 7}, {0.03, false, 1}, {0.03, false, 7}};
  for (size_t i = 0; i < want.size(); ++i) {
    const json& row = t["rows"][i];
    char name[24];
    std::snprintf(name, sizeof name, "p%04zu", i);
    EXPECT_EQ(row["point"], name);
    EXPECT_DOUBLE_EQ(row["workload.injection_rate"].get<double>(), std::get<0>(want[i]));
    EXPECT_EQ(row["network.combining"], std::get<1>(want[i]));
    EXPECT_EQ(row["seed"], std::get<2>(want[i]));
    EXPECT_EQ(row["status"], 0);
    EXPECT_TRUE(row["message"].is_null());
    // The row's figures are the point's own summary, and the point ran with its values.
    const json st = json::parse(test::read_text(d / "s" / "points" / name / "stats.json"));
    for (const auto& k : {"offered_rate", "accepted_rate", "packets_delivered", "saturated"}) EXPECT_EQ(row[k], st["summary"][k]) << name << " " << k;
    const json rc = json::parse(test::read_text(d / "s" / "points" / name / "config.resolved.json"));
    EXPECT_DOUBLE_EQ(rc["workload"]["injection_rate"].get<double>(), std::get<0>(want[i]));
    EXPECT_EQ(rc["network"]["combining"], std::get<1>(want[i]));
    EXPECT_EQ(rc["experiment"]["seed"], std::get<2>(want[i]));
    EXPECT_EQ(rc["workload"]["measure_cycles"], 2000) << "--set reaches every point";
  }
  // Another seed is other traffic; the same seed at the same rate is the same traffic.
  EXPECT_NE(t["rows"][0]["packets_delivered"], t["rows"][1]["packets_delivered"]);
  // The CSV holds the same rows under the same columns, and the columns carry units.
  const auto csv = lines(test::read_text(d / "s" / "sweep.csv"));
  ASSERT_EQ(csv.size(), 9u);
  EXPECT_EQ(csv[0].rfind("point,workload.injection_rate,network.combining,seed,status,message,", 0), 0u) << csv[0];
  EXPECT_EQ(csv[1].rfind("p0000,0.01,true,1,0,,", 0), 0u) << csv[1];
  std::set<std::string> named;
  for (const auto& c : t["columns"]) {
    named.insert(c["name"].get<std::string>());
    if (c["name"] == "workload.injection_rate") {
      EXPECT_EQ(c["unit"], "flits/node/cycle");
    }
  }
  EXPECT_EQ(named.size(), t["columns"].size());
  EXPECT_TRUE(named.count("avg_unicast_latency_cycles"));
}

// A workload that measures a list of points (here MBCF round trips at two sizes) gives one
// column per point, COMMAND@SIZE, holding the point's value with its unit: a sweep of message
// sizes or seeds is a table, not a folder of stats.json files to open one by one.
TEST(Sweep, EachMeasuredPointIsAColumnNamedByItsCommandAndSize) {
  const auto d = test::temp_dir("sweep_points");
  const auto r = sweep(test::config_path("mbcf-ss20-100tx.json") +
                       " --set workload.kind=rtt --set 'workload.sizes=[4,64]' --set workload.iterations=20"
                       " --grid 'workload.commands=[[\"write\"],[\"read\"]]' --seed 1,2 --jobs 2 --quiet --out " + (d / "s").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const json t = table(d / "s");
  ASSERT_EQ(t["rows"].size(), 4u);
  std::map<std::string, json> unit;
  for (const auto& c : t["columns"]) unit[c["name"].get<std::string>()] = c["unit"];
  size_t cells = 0;
  for (const auto& row : t["rows"]) {
    const json st = json::parse(test::read_text(d / "s" / "points" / row["point"].get<std::string>() / "stats.json"));
    const json& pts = st["summary"]["points"];
    ASSERT_EQ(pts.size(), 2u) << row["point"];
    for (const auto& p : pts) {
      const std::string k = p["command"].get<std::string>() + "@" + std::to_string(p["size"].get<int>());
      ASSERT_TRUE(row.contains(k)) << row["point"] << " " << k;
      EXPECT_EQ(row[k], p["value"]) << k;
      EXPECT_EQ(unit[k], "us") << k;
      ++cells;
    }
  }
  EXPECT_EQ(cells, 8u);
  // A WRITE point's row has no READ column's value (null), and the CSV names the columns.
  EXPECT_TRUE(t["rows"][0]["MBCF_READ_STAT@4"].is_null());
  EXPECT_GT(t["rows"][2]["MBCF_READ_STAT@4"].get<double>(), 0.0);
  const auto header = lines(test::read_text(d / "s" / "sweep.csv"))[0];
  EXPECT_NE(header.find(",MBCF_WRITE_STAT@4,MBCF_WRITE_STAT@64"), std::string::npos) << header;
}

TEST(Sweep, ZippedListsVaryTogether) {
  const auto d = test::temp_dir("sweep_zip");
  const auto r = sweep(kNet + kShort + "--zip 'workload.injection_rate=[0.01,0.02,0.04]' --zip 'network.buffer_depth=[2,4,8]' --quiet --out " +
                       (d / "s").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const json t = table(d / "s");
  ASSERT_EQ(t["rows"].size(), 3u);
  EXPECT_EQ(t["rows"][2]["network.buffer_depth"], 8);
  EXPECT_DOUBLE_EQ(t["rows"][2]["workload.injection_rate"].get<double>(), 0.04);
}

TEST(Sweep, ItResumesWithoutRunningAFinishedPointAgain) {
  const auto d = test::temp_dir("sweep_resume");
  const std::string args = kNet + kShort + "--grid 'workload.injection_rate=[0.01,0.02,0.03]' --out " + (d / "s").string();
  ASSERT_EQ(sweep(args + " --quiet").status, 0);
  const std::string first = test::read_text(d / "s" / "sweep.csv");
  // One point lost (as after a crash): only that one runs again.
  fs::remove_all(d / "s" / "points" / "p0001");
  const auto mtime = [&](const char* p) { return fs::last_write_time(d / "s" / "logs" / p); };
  const auto t0 = mtime("p0000.err"), t2 = mtime("p0002.err");
  const auto r = sweep(args);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("2 done already"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("p0001"), std::string::npos);
  EXPECT_EQ(r.output.find("p0000 "), std::string::npos) << "a finished point ran again:\n" << r.output;
  EXPECT_EQ(mtime("p0000.err"), t0);
  EXPECT_EQ(mtime("p0002.err"), t2);
  EXPECT_EQ(test::read_text(d / "s" / "sweep.csv"), first) << "the resumed table equals the first";
  // A point whose folder holds another experiment's results (another --set) is run again.
  const auto r2 = sweep(args + " --set network.buffer_depth=4");
  ASSERT_EQ(r2.status, 0) << r2.output;
  EXPECT_NE(r2.output.find("0 done already"), std::string::npos) << r2.output;
}

TEST(Sweep, AFailedPointIsRecordedAndTheOthersGoOn) {
  const auto d = test::temp_dir("sweep_fail");
  // 4^11 nodes passes the parameter's range but not the network's limit: found when it builds.
  const auto r = sweep(kNet + kShort + "--grid 'network.levels=[2,11,3]' --quiet --out " + (d / "s").string());
  EXPECT_EQ(r.status, 2) << r.output;
  const json t = table(d / "s");
  ASSERT_EQ(t["rows"].size(), 3u);
  EXPECT_EQ(t["rows"][0]["status"], 0);
  EXPECT_EQ(t["rows"][1]["status"], 1);
  EXPECT_NE(t["rows"][1]["message"].get<std::string>().find("at most 65536"), std::string::npos) << t["rows"][1];
  EXPECT_TRUE(t["rows"][1]["offered_rate"].is_null()) << "a point that did not run has no figures";
  EXPECT_EQ(t["rows"][2]["status"], 0) << "the point after the failed one still ran";
  EXPECT_FALSE(t["rows"][2]["offered_rate"].is_null());
}

TEST(Sweep, APointStoppedByALimitKeepsItsFiguresAndTheSweepSaysSo) {
  const auto d = test::temp_dir("sweep_limit");
  const auto r = sweep(test::config_path("default.json") + " --set workload.measure_cycles=500 --grid 'workload.injection_rate=[0.01,0.6]' --quiet --out " +
                       (d / "s").string());
  EXPECT_EQ(r.status, 3) << r.output;
  const json t = table(d / "s");
  EXPECT_EQ(t["rows"][0]["status"], 0);
  EXPECT_EQ(t["rows"][1]["status"], 3);
  EXPECT_EQ(t["rows"][1]["saturated"], true);
  EXPECT_NE(t["rows"][1]["message"].get<std::string>().find("stopped by workload."), std::string::npos);
}

TEST(Sweep, BadAxesAreRefusedBeforeAnythingRuns) {
  const auto d = test::temp_dir("sweep_bad");
  const std::string out = " --out " + (d / "s").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--grid 'network.levelz=[2,3]'", "no parameter 'network.levelz'"},
      {"--grid 'network.levels=[2,\"a\"]'", "sweep point p0001 (network.levels=\"a\"): --set: network.levels: expected int"},
      {"--grid 'network.levels=[2,13]'", "out of range"},
      {"--grid network.levels=2", "expected a JSON list"},
      {"--grid 'network.levels=[]'", "non-empty JSON list"},
      {"--grid network.levels=3:1:2", "LAST >= FIRST"},
      {"--zip 'network.levels=[2,3]' --zip 'workload.injection_rate=[0.1]'", "need one length"},
      {"--grid 'network.levels=[2]' --grid 'network.levels=[3]'", "swept twice"},
      {"--grid 'network.levels=[2]' --set network.levels=3", "also swept"},
      {"--seed 1,x", "'x' is not a seed"},
      {"--seed 1 --seed 1", "given twice"},
      {"--jobs 0", "--jobs 0"},
      {"--shard 2/2", "0 <= I < N"},
      {"--grid 'experiment.seed=[1,2]'", "sweep seeds with --seed"},
      {"--bogus 1", "unrecognised option '--bogus'"},
  };
  for (const auto& [args, want] : cases) {
    const auto r = sweep(kNet + " " + args + out);
    EXPECT_EQ(r.status, 1) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(want), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(lines(r.output).size(), 1u) << "one line: " << r.output;
    EXPECT_FALSE(fs::exists(d / "s")) << args << ": nothing may be written for bad input";
  }
}

TEST(Sweep, ShardsAndAFinalRunGiveTheTableOfOneRun) {
  const auto d = test::temp_dir("sweep_shard");
  const std::string axes = kNet + kShort + "--grid workload.injection_rate=0.01:0.01:0.05 --quiet";
  ASSERT_EQ(sweep(axes + " --out " + (d / "whole").string()).status, 0);
  for (int i = 0; i < 2; ++i) {
    const auto r = sweep(axes + " --shard " + std::to_string(i) + "/2 --out " + (d / "sharded").string());
    ASSERT_EQ(r.status, 0) << r.output;
    const json part = table(d / "sharded", "sweep.shard-" + std::to_string(i) + "-of-2");
    ASSERT_EQ(part["rows"].size(), i == 0 ? 3u : 2u);  // points 0, 2, 4 and 1, 3
    EXPECT_EQ(part["rows"][0]["point"], i == 0 ? "p0000" : "p0001");
  }
  EXPECT_FALSE(fs::exists(d / "sharded" / "sweep.csv")) << "a shard writes only its own table";
  const auto r = sweep(axes + " --out " + (d / "sharded").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(test::read_text(d / "sharded" / "sweep.csv"), test::read_text(d / "whole" / "sweep.csv"));
  EXPECT_EQ(table(d / "sharded")["rows"], table(d / "whole")["rows"]);
}

// CI's check of the MPI path: two ranks, oversubscribed on a small host, give the table of one
// process, row for row (scripts/setup.sh installs openmpi-bin).
TEST(Sweep, UnderMpirunTwoRanksGiveTheTableOfOneProcess) {
#ifdef MBPSIM_TEST_ASAN
  GTEST_SKIP() << "Open MPI's own allocations at MPI_Init fail LeakSanitizer; the plain suite runs this";
#endif
  ASSERT_EQ(std::system("command -v mpirun > /dev/null"), 0) << "mpirun is missing: apt-get install openmpi-bin libopenmpi-dev (scripts/setup.sh does)";
  const auto d = test::temp_dir("sweep_mpi");
  const std::string axes = kNet + kShort + "--grid workload.injection_rate=0.01:0.02:0.05 --grid 'network.combining=[true,false]' --quiet";
  ASSERT_EQ(sweep(axes + " --out " + (d / "one").string()).status, 0);
  // Open MPI refuses root unless told; CI's containers run as root.
  const auto r = test::run_cmd("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 mpirun --oversubscribe -np 2 " +
                               test::mbpsim_bin().substr(test::mbpsim_bin().find(' ') + 1) + " sweep " + axes + " --jobs 1 --out " +
                               (d / "mpi").string() + " 2>&1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(test::read_text(d / "mpi" / "sweep.csv"), test::read_text(d / "one" / "sweep.csv"));
  EXPECT_EQ(table(d / "mpi")["rows"], table(d / "one")["rows"]);
  // Both ranks ran points: each point's stats were written by one of two processes.
  std::set<std::string> pids;
  for (int i = 0; i < 6; ++i) {
    char name[24];
    std::snprintf(name, sizeof name, "p%04d", i);
    ASSERT_TRUE(fs::exists(d / "mpi" / "points" / name / "stats.json")) << name;
  }
  EXPECT_EQ(test::run_cmd("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2 " +
                          test::mbpsim_bin().substr(test::mbpsim_bin().find(' ') + 1) + " sweep " + axes + " --shard 0/2 --out " +
                          (d / "x").string())
                .status,
            1)
      << "--shard under mpirun is refused";
}

TEST(Cli, EveryCommandHasHelpAndTheProgramItsVersion) {
  for (const std::string cmd : {"run", "sweep", "plot", "validate", "params", "stats-doc", "trace"}) {
    const auto r = test::run_cmd(test::mbpsim_bin() + " " + cmd + " --help");
    EXPECT_EQ(r.status, 0) << cmd << ": " << r.output;
    EXPECT_NE(r.output.find("usage: mbpsim " + cmd), std::string::npos) << cmd << ": " << r.output;
    const auto h = test::run_cmd(test::mbpsim_bin() + " help " + cmd);
    EXPECT_EQ(h.output, r.output) << "mbpsim help " << cmd;
  }
  const auto v = test::run_cmd(test::mbpsim_bin() + " --version");
  EXPECT_EQ(v.status, 0);
  EXPECT_EQ(v.output.rfind("mbpsim 0.", 0), 0u) << v.output;
  EXPECT_NE(v.output.find("SystemC 2.3"), std::string::npos) << v.output;
}

TEST(Cli, EveryResultFileRecordsTheVersionTheCommandAndTheConfigsHash) {
  const auto d = test::temp_dir("provenance");
  const std::string base = test::mbpsim_bin() + " run " + kNet + kShort + " --quiet --out ";
  ASSERT_EQ(test::run_cmd(base + (d / "a").string()).status, 0);
  ASSERT_EQ(test::run_cmd(base + (d / "b").string()).status, 0);
  ASSERT_EQ(test::run_cmd(base + (d / "c").string() + " --seed 5").status, 0);
  const auto version = test::run_cmd(test::mbpsim_bin() + " --version").output;
  json p[3];
  int i = 0;
  for (const char* run : {"a", "b", "c"}) {
    const json st = json::parse(test::read_text(d / run / "stats.json"));
    p[i] = st["provenance"];
    EXPECT_NE(version.find(p[i]["mbpsim_version"].get<std::string>()), std::string::npos) << version;
    EXPECT_EQ(p[i]["config_sha256"].get<std::string>().size(), 64u);
    // stats.json has the command that decides the results (not --out); the others, all of it.
    const auto cmd = p[i]["command"].dump();
    EXPECT_EQ(cmd.find("--out"), std::string::npos) << cmd;
    EXPECT_NE(cmd.find("workload.measure_cycles=2000"), std::string::npos) << cmd;
    for (const char* f : {"host.json", "config.resolved.json"}) {
      const json o = json::parse(test::read_text(d / run / f));
      EXPECT_EQ(o["provenance"]["config_sha256"], p[i]["config_sha256"]) << f;
      EXPECT_EQ(o["provenance"]["mbpsim_version"], p[i]["mbpsim_version"]) << f;
      EXPECT_NE(o["provenance"]["command"].dump().find((d / run).string()), std::string::npos) << f << " holds the whole command";
    }
    ++i;
  }
  EXPECT_EQ(p[0]["config_sha256"], p[1]["config_sha256"]);
  EXPECT_NE(p[0]["config_sha256"], p[2]["config_sha256"]) << "another seed is another experiment";
  EXPECT_EQ(test::read_text(d / "a" / "stats.json"), test::read_text(d / "b" / "stats.json"));
  // The hash is of the resolved config: the same experiment written another way has the same one.
  ASSERT_EQ(test::run_cmd(test::mbpsim_bin() + " run " + kNet + kShort + " --set workload.injection_rate=" +
                          json::parse(test::read_text(d / "a" / "config.resolved.json"))["workload"]["injection_rate"].dump() +
                          " --quiet --out " + (d / "e").string())
                .status,
            0);
  EXPECT_EQ(json::parse(test::read_text(d / "e" / "stats.json"))["provenance"]["config_sha256"], p[0]["config_sha256"]);
}

// The plot draws the table's numbers: its series (written beside the image) are the rows of the
// sweep, averaged over seeds, grouped by the series parameter; labels carry the units.
TEST(Plot, ItsSeriesAreTheSweepsRows) {
  const auto d = test::temp_dir("plot");
  const auto s = sweep(test::config_path("default.json") + " --set workload.measure_cycles=1000 --set workload.drain_cycles=20000" +
                       " --grid 'workload.injection_rate=[0.004,0.008,0.012]' --grid 'network.combining=[true,false]' --seed 1,2 --quiet --out " +
                       (d / "s").string());
  ASSERT_TRUE(s.status == 0 || s.status == 3) << s.output;
  const auto r = test::run_cmd(test::mbpsim_bin() + " plot " + (d / "s").string() +
                               " --x workload.injection_rate --y avg_ack_latency_cycles --series network.combining --out " + (d / "p.svg").string());
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_TRUE(fs::exists(d / "p.svg"));
  EXPECT_NE(test::read_text(d / "p.svg").find("<svg"), std::string::npos);
  const json drawn = json::parse(test::read_text(d / "p.series.json"));
  EXPECT_EQ(drawn["x_label"], "workload.injection_rate (flits/node/cycle)");
  EXPECT_EQ(drawn["y_label"], "avg_ack_latency_cycles (cycles)");
  const json t = table(d / "s");
  size_t drawn_points = 0;
  ASSERT_EQ(drawn["series"].size(), 2u);
  for (const auto& e : drawn["series"]) {
    for (size_t i = 0; i < e["x"].size(); ++i) {
      std::vector<double> ys;
      for (const auto& row : t["rows"])
        if (row["network.combining"] == e["series_value"] && row["workload.injection_rate"] == e["x"][i] && !row["avg_ack_latency_cycles"].is_null())
          ys.push_back(row["avg_ack_latency_cycles"].get<double>());
      ASSERT_EQ(ys.size(), 2u) << "two seeds per point";
      EXPECT_DOUBLE_EQ(e["y"][i].get<double>(), (ys[0] + ys[1]) / 2);
      EXPECT_DOUBLE_EQ(e["y_min"][i].get<double>(), std::min(ys[0], ys[1]));
      EXPECT_DOUBLE_EQ(e["y_max"][i].get<double>(), std::max(ys[0], ys[1]));
      ++drawn_points;
    }
  }
  EXPECT_EQ(drawn_points, 6u);
  // Bad requests: one line, status 1, no image.
  for (const std::string& bad : {std::string(" --x workload.injection_rate --y nonesuch"), std::string(" --x workload.injection_rate --y avg_ack_latency_cycles"),
                                 std::string(" --y avg_ack_latency_cycles")}) {
    const auto b = test::run_cmd(test::mbpsim_bin() + " plot " + (d / "s").string() + bad + " --out " + (d / "bad.png").string());
    EXPECT_EQ(b.status, 1) << bad << ": " << b.output;
    EXPECT_EQ(lines(b.output).size(), 1u) << b.output;
    EXPECT_FALSE(fs::exists(d / "bad.png"));
  }
}

// Several runs in one unit are one figure: a curve per run and command, named by the run's
// folder, each exactly its run's points (Figure 6.8's kind: MBCF and UDP round trips on the same
// hosts). Runs in different units, or a sweep among runs, are refused in one line.
TEST(Plot, SeveralRunsInOneUnitAreDrawnTogether) {
  const auto d = test::temp_dir("plot_runs");
  const std::string rtt = " --set workload.kind=rtt --set 'workload.sizes=[4,64]' --set workload.iterations=20 --quiet --out ";
  for (const auto& [cfg, out] : std::vector<std::pair<std::string, std::string>>{
           {"mbcf-ss20-100t-half.json --set 'workload.commands=[\"write\"]'", "mbcf"}, {"sockets-ss20-100t-half-udp.json", "udp"}}) {
    const auto r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("") + cfg + rtt + (d / out).string());
    ASSERT_EQ(r.status, 0) << r.output;
  }
  auto r = test::run_cmd(test::mbpsim_bin() + " plot " + (d / "mbcf").string() + " " + (d / "udp").string() + " --out " + (d / "p.png").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const json drawn = json::parse(test::read_text(d / "p.series.json"));
  EXPECT_EQ(drawn["series_key"], "curve");
  ASSERT_EQ(drawn["series"].size(), 2u);
  std::map<std::string, json> want;
  for (const char* run : {"mbcf", "udp"}) {
    const json st = json::parse(test::read_text(d / run / "stats.json"));
    for (const auto& p : st["summary"]["points"])
      want[std::string(run) + ": " + p["command"].get<std::string>() + "@" + std::to_string(p["size"].get<int>())] = p["value"];
  }
  ASSERT_EQ(want.size(), 4u);
  size_t matched = 0;
  for (const auto& e : drawn["series"])
    for (size_t i = 0; i < e["x"].size(); ++i) {
      const std::string k = e["series_value"].get<std::string>() + "@" + std::to_string(e["x"][i].get<int>());
      ASSERT_TRUE(want.count(k)) << k;
      EXPECT_EQ(want[k], e["y"][i]) << k;
      ++matched;
    }
  EXPECT_EQ(matched, 4u);
  r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("mbcf-ss20-100tx.json") +
                    " --set workload.kind=peak --set 'workload.sizes=[64]' --quiet --out " + (d / "peak").string());
  ASSERT_EQ(r.status, 0) << r.output;
  r = test::run_cmd(test::mbpsim_bin() + " plot " + (d / "mbcf").string() + " " + (d / "peak").string() + " --out " + (d / "q.png").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("different units (MB/s, us)"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  // --where chooses the points of one unit (a run may measure latencies and rates alike).
  r = test::run_cmd(test::mbpsim_bin() + " plot " + (d / "mbcf").string() + " " + (d / "peak").string() + " --where unit=MB/s --out " +
                    (d / "r.png").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const json rates = json::parse(test::read_text(d / "r.series.json"));
  EXPECT_EQ(rates["y_label"], "value (MB/s)");
  ASSERT_EQ(rates["series"].size(), 1u);
  EXPECT_EQ(rates["series"][0]["series_value"], "peak: MBCF_WRITE");
}

// A run's measured points are a table too: `mbpsim plot RUN` draws value against size, one
// curve per command, in the points' unit, exactly the run's summary.points; a run that measured
// no list of points, and a sweep without --x, are refused in one line.
TEST(Plot, ARunsMeasuredPointsAreOneCurvePerCommand) {
  const auto d = test::temp_dir("plot_run");
  auto r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("mbcf-ss20-100tx.json") +
                         " --set workload.kind=rtt --set 'workload.sizes=[4,64,1024]' --set workload.iterations=20"
                         " --set 'workload.commands=[\"write\",\"read\"]' --quiet --out " + (d / "run").string());
  ASSERT_EQ(r.status, 0) << r.output;
  r = test::run_cmd(test::mbpsim_bin() + " plot " + (d / "run").string() + " --log-x --out " + (d / "p.png").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const json drawn = json::parse(test::read_text(d / "p.series.json"));
  EXPECT_EQ(drawn["x_label"], "size (bytes)");
  EXPECT_EQ(drawn["y_label"], "value (us)");
  const json pts = json::parse(test::read_text(d / "run" / "stats.json"))["summary"]["points"];
  ASSERT_EQ(pts.size(), 6u);
  ASSERT_EQ(drawn["series"].size(), 2u);
  size_t matched = 0;
  for (const auto& e : drawn["series"]) {
    EXPECT_EQ(e["name"], "command=" + e["series_value"].get<std::string>());
    ASSERT_EQ(e["x"].size(), 3u);
    for (size_t i = 0; i < 3; ++i)
      for (const auto& p : pts)
        if (p["command"] == e["series_value"] && p["size"] == e["x"][i]) {
          EXPECT_EQ(p["value"], e["y"][i]);
          ++matched;
        }
  }
  EXPECT_EQ(matched, 6u);
  EXPECT_TRUE(fs::exists(d / "p.png"));
  // Without --out the image goes beside the run's folder, not into it: the run's folder holds
  // what the run wrote alone, so the same run can be made into it again.
  r = test::run_cmd(test::mbpsim_bin() + " plot " + (d / "run").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::exists(d / "plot-run.png"));
  EXPECT_TRUE(fs::exists(d / "plot-run.series.json"));
  r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("mbcf-ss20-100tx.json") +
                    " --set workload.kind=rtt --set 'workload.sizes=[4]' --set workload.iterations=20 --quiet --out " + (d / "run").string());
  EXPECT_EQ(r.status, 0) << r.output;
  r = test::run_cmd(test::mbpsim_bin() + " run " + kNet + kShort + "--quiet --out " + (d / "net").string());
  ASSERT_EQ(r.status, 0) << r.output;
  r = test::run_cmd(test::mbpsim_bin() + " plot " + (d / "net").string() + " --out " + (d / "q.png").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("measured no list of points"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

// The heartbeat's percentage is the workload's own progress (the references of the sharing
// pattern; the measured points of an MBCF or a socket workload, and how far the one in progress
// is), rising to the end; a workload that cannot say gives the run limit's, named.
TEST(Cli, TheHeartbeatSaysHowMuchOfTheWorkloadIsDone) {
  // Each run needs a few heartbeats, and the plain build gives it dozens. The sanitizer build
  // runs these workloads about fifteen times slower, so an eighth of the work still gives more
  // heartbeats than the plain build does (it took 53 s there with the whole work).
#ifdef MBPSIM_TEST_ASAN
  const auto work = [](int n) { return std::to_string(n / 8); };
#else
  const auto work = [](int n) { return std::to_string(n); };
#endif
  const auto d = test::temp_dir("heartbeat_progress");
  auto percentages = [&](const std::string& config, const std::string& sets, const std::string& out) {
    const auto r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path(config) + sets + " --set experiment.heartbeat_s=0.02 --out " +
                                 (d / out).string());
    EXPECT_EQ(r.status, 0) << r.output;
    std::vector<double> pct;
    for (const auto& l : lines(r.output)) {
      const auto at = l.find("% of the workload done");
      if (l.rfind("[mbpsim] ", 0) != 0 || at == std::string::npos) continue;
      const auto bar = l.rfind("| ", at);
      pct.push_back(std::stod(l.substr(bar + 2, at - bar - 2)));
    }
    EXPECT_GE(pct.size(), 2u) << config << ": " << r.output;
    for (size_t i = 1; i < pct.size(); ++i) EXPECT_GE(pct[i], pct[i - 1]) << config << ": " << r.output;
    if (!pct.empty()) {
      EXPECT_LE(pct.back(), 100.0);
      EXPECT_GT(pct.back(), pct.front()) << config << ": " << r.output;
    }
    return pct;
  };
  percentages("mbp16.json", " --set sharing.refs_per_proc=" + work(10000), "o");
  // Four points of 20,002 round trips each (2,502 under the sanitizers): the percentage moves
  // within a point, not by quarters.
  const auto m = percentages("mbcf-ss20-100t-half.json",
                             " --set workload.kind=rtt --set workload.iterations=" + work(20000) +
                                 " --set 'workload.commands=[\"write\"]' --set 'workload.sizes=[4,64,256,1024]'",
                             "m");
  EXPECT_TRUE(std::any_of(m.begin(), m.end(), [](double p) { return std::fmod(p, 25.0) != 0; }));
  percentages("sockets-ss20-100t-half-udp.json", " --set workload.kind=rtt --set workload.iterations=" + work(10000) + " --set 'workload.sizes=[4,1024]'", "u");
  const auto n = test::run_cmd(test::mbpsim_bin() + " run " + kNet + " --set workload.measure_cycles=" + work(400000) +
                               " --set experiment.heartbeat_s=0.05 --out " + (d / "n").string());
  EXPECT_NE(n.output.find("% of the longest the run may take"), std::string::npos) << n.output;
}
