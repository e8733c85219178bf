// The mbpsim command line as a user meets it: exit statuses, one-line errors, outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "tests/test_util.h"

namespace mbpsim {
namespace {

using test::run_cmd;

using test::count_lines;

TEST(Cli, MalformedJsonExitsOneWithOneLine) {
  auto d = test::temp_dir("cli_badjson");
  test::write_text(d / "c.json", "{ \"network\": { \"radix\": 4 ");
  auto r = run_cmd(test::mbpsim_bin() + " run " + (d / "c.json").string() + " --out " + (d / "o").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find("c.json:1:"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(d / "o")) << "no partial output on bad input";
}

// A bad config's one line is the whole output even where the environment does not silence
// SystemC's banner: mbpsim does (and a run's output starts with its own line).
TEST(Cli, NoSystemCBannerWithoutTheEnvironmentVariable) {
  auto d = test::temp_dir("cli_banner");
  test::write_text(d / "c.json", "{ \"network\": { \"radix\": 4 ");
  auto r = run_cmd(std::string("env -u SYSTEMC_DISABLE_COPYRIGHT_MESSAGE ") + MBPSIM_BINARY + " run " + (d / "c.json").string() +
                   " --out " + (d / "o").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_EQ(r.output.find("Copyright"), std::string::npos) << r.output;
  r = run_cmd(std::string("env -u SYSTEMC_DISABLE_COPYRIGHT_MESSAGE ") + MBPSIM_BINARY + " run " + test::config_path("default.json") +
              " --set workload.measure_cycles=200 --out " + (d / "o").string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("mbpsim: ", 0), 0u) << r.output;
  EXPECT_EQ(r.output.find("Copyright"), std::string::npos) << r.output;
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

// A seed is refused as it was typed: "--seed -3" used to wrap to 2^64 - 3 and be reported as
// that number out of range. run, validate and stats-doc take one seed, a sweep a list.
TEST(Cli, ASeedIsRefusedAsTypedAndRunTakesOne) {
  const std::string cfg = test::config_path("fig2-7-multicast.json");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run " + cfg + " --seed -3", "--seed -3: '-3' is not a seed (a whole number >= 0)"},
      {"validate " + cfg + " --seed 2.5", "--seed 2.5: '2.5' is not a seed"},
      {"stats-doc " + cfg + " --seed x", "--seed x: 'x' is not a seed"},
      {"run " + cfg + " --seed 1,2", "--seed 1,2: run takes one seed (a sweep takes a list)"},
      {"run " + cfg + " --seed ' -3'", "' -3' is not a seed"},
  };
  for (const auto& [args, want] : cases) {
    auto r = run_cmd(test::mbpsim_bin() + " " + args);
    EXPECT_EQ(r.status, 1) << args << ": " << r.output;
    EXPECT_EQ(count_lines(r.output), 1) << args << ": " << r.output;
    EXPECT_NE(r.output.find(want), std::string::npos) << args << ": " << r.output;
    EXPECT_EQ(r.output.find("18446744073709551613"), std::string::npos) << r.output;
  }
  auto ok = test::run_config("fig2-7-multicast.json", "--seed 7");
  ASSERT_EQ(ok.status, 0) << ok.output;
  EXPECT_EQ(ok.stats["run"]["seed"], 7) << ok.output;
}

// A bad element of a list names the key and the index (it used to say only "[1]").
TEST(Cli, BadListElementsNameTheKeyAndIndex) {
  const std::string cfg = test::config_path("mbcf-ss20-100tx.json");
  for (const auto& [set, where] : std::vector<std::pair<std::string, std::string>>{
           {"--set workload.kind=rtt --set 'workload.commands=[\"write\",\"fifo\"]'", "workload.commands[1]"},
           {"--set workload.kind=rtt --set 'workload.sizes=[16,2]'", "workload.sizes[1]"},
           // An empty list measured nothing and exited 0.
           {"--set workload.kind=peak --set 'workload.sizes=[]'", "workload.sizes"}}) {
    auto r = run_cmd(test::mbpsim_bin() + " run " + cfg + " " + set + " --out /tmp/mbpsim_never_written_list");
    EXPECT_EQ(r.status, 1) << set << ": " << r.output;
    EXPECT_NE(r.output.find(where + ": "), std::string::npos) << r.output;
    EXPECT_EQ(count_lines(r.output), 1) << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists("/tmp/mbpsim_never_written_list"));
}

// peak, secure and raytrace send MBCF_WRITEs only and datagram sends no MBCF command: a list
// asking them for another command used to be ignored without a word (the run measured writes).
TEST(Cli, WorkloadsRejectCommandsTheyDoNotRun) {
  const std::string ether = test::config_path("mbcf-ss20-100tx.json"), mbp2 = test::config_path("mbp2p-ss20.json");
  for (const auto& [args, where] : std::vector<std::pair<std::string, std::string>>{
           {ether + " --set workload.kind=peak --set 'workload.commands=[\"read\"]'", "workload.commands[0]: must be a command peak measures: write"},
           {ether + " --set workload.kind=raytrace --set 'workload.commands=[\"write\",\"swap\"]'", "workload.commands[1]: must be a command raytrace measures: write"},
           {mbp2 + " --set workload.kind=secure --set 'workload.commands=[\"fifo\"]'", "workload.commands[0]: must be a command secure measures: write"},
           {mbp2 + " --set workload.kind=datagram --set 'workload.commands=[\"write\"]'", "workload.commands: datagram measures no MBCF command by name"}}) {
    auto r = run_cmd(test::mbpsim_bin() + " run " + args + " --out /tmp/mbpsim_never_written_cmds");
    EXPECT_EQ(r.status, 1) << args << ": " << r.output;
    EXPECT_NE(r.output.find(where), std::string::npos) << r.output;
    EXPECT_EQ(count_lines(r.output), 1) << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists("/tmp/mbpsim_never_written_cmds"));
  // `validate` builds what `run` builds, so it says the same.
  auto v = run_cmd(test::mbpsim_bin() + " validate " + ether + " --set workload.kind=peak --set 'workload.commands=[\"read\"]'");
  EXPECT_EQ(v.status, 1) << v.output;
  EXPECT_NE(v.output.find("must be a command peak measures"), std::string::npos) << v.output;
  v = run_cmd(test::mbpsim_bin() + " validate " + ether + " --set workload.kind=peak");
  EXPECT_EQ(v.status, 0) << v.output;
  // The command a workload does run is accepted by name.
  auto r = run_cmd(test::mbpsim_bin() + " run " + ether + " --quiet --set workload.kind=peak --set 'workload.commands=[\"write\"]'" +
                   " --set 'workload.sizes=[1024]' --set workload.transfers=32 --out " + test::temp_dir("cli_cmds").string());
  EXPECT_EQ(r.status, 0) << r.output;
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

// Every statistic of every shipped config says what it counts and in which unit: stats-doc
// prints "-" for a statistic registered without a description, or whose unit neither its name
// nor its registration gives.
TEST(Cli, EveryStatisticOfEveryShippedConfigHasADescriptionAndAUnit) {
  int configs = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(MBPSIM_SOURCE_DIR) + "/configs")) {
    if (e.path().extension() != ".json") continue;
    ++configs;
    const auto doc = run_cmd(test::mbpsim_bin() + " stats-doc " + e.path().string());
    ASSERT_EQ(doc.status, 0) << e.path() << "\n" << doc.output;
    std::istringstream lines(doc.output);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_FALSE(line.size() >= 2 && line.compare(line.size() - 2, 2, " -") == 0) << e.path().filename() << ": " << line;
      std::istringstream cols(line);
      std::string path, kind, unit;
      cols >> path >> kind >> unit;
      EXPECT_NE(unit, "-") << e.path().filename() << ": " << line;
    }
  }
  EXPECT_GE(configs, 20);
}

// `mbpsim stats-doc` lists the statistics a config's system registers, each with its kind and
// description, under the very names a run of that config writes into stats.json.
TEST(Cli, StatsDocListsWhatARunWritesWithDescriptions) {
  for (const char* cfg : {"default.json", "mbcf-ss20-100tx.json", "mbp2p-ss20.json"}) {
    const auto doc = run_cmd(test::mbpsim_bin() + " stats-doc " + test::config_path(cfg));
    ASSERT_EQ(doc.status, 0) << cfg << "\n" << doc.output;
    const auto run = test::run_config(cfg);
    ASSERT_EQ(run.status, 0) << run.command << "\n" << run.output;
    std::istringstream lines(doc.output);
    int listed = 0;
    std::set<std::string> summary_listed;
    for (std::string line; std::getline(lines, line); ++listed) {
      const std::string path = line.substr(0, line.find(' '));
      if (path.rfind("summary.", 0) == 0) {  // the summary's fields (some only in some configurations)
        summary_listed.insert(path.substr(8));
        continue;
      }
      const nlohmann::json* at = &run.stats["stats"];
      for (size_t b = 0, e = 0; e != std::string::npos && at; b = e + 1) {
        e = path.find('.', b);
        const std::string part = path.substr(b, e == std::string::npos ? std::string::npos : e - b);
        at = at->contains(part) ? &(*at)[part] : nullptr;
      }
      EXPECT_NE(at, nullptr) << cfg << ": stats-doc lists " << path << ", which the run did not write";
    }
    EXPECT_GT(listed, 10) << cfg;
    // Every field of the run's summary is listed, with the unit stats.json gives it.
    for (auto it = run.stats["summary"].begin(); it != run.stats["summary"].end(); ++it) {
      EXPECT_TRUE(summary_listed.count(it.key())) << cfg << ": summary." << it.key() << " is not in stats-doc";
      EXPECT_TRUE(run.stats["summary_units"].contains(it.key())) << cfg << ": " << it.key();
    }
  }
  const auto mbcf = run_cmd(test::mbpsim_bin() + " stats-doc " + test::config_path("mbcf-ss20-100tx.json") +
                            " --prefix system.mbcf.packets_sent");
  EXPECT_EQ(mbcf.status, 0) << mbcf.output;
  EXPECT_NE(mbcf.output.find("counter   count            MBCF/Ether packets handed to a NIC (acks and retransmissions included)"),
            std::string::npos)
      << mbcf.output;
  // Units: by the name's convention, or given where the name says none.
  const auto net = run_cmd(test::mbpsim_bin() + " stats-doc " + test::config_path("default.json") + " --prefix system.net");
  EXPECT_NE(net.output.find("system.net.latency.unicast                               histogram cycles "), std::string::npos) << net.output;
  EXPECT_NE(net.output.find("system.net.flits_injected                                counter   flits "), std::string::npos) << net.output;
  EXPECT_NE(net.output.find("system.net.router_0_0.utilisation                        formula   flits/link/cycle "), std::string::npos)
      << net.output;
  const auto pme = run_cmd(test::mbpsim_bin() + " stats-doc " + test::config_path("mbp2p-ss20.json") + " --prefix system.host1.nic.pme.busy_ps");
  EXPECT_NE(pme.output.find("counter   ps "), std::string::npos) << pme.output;
  const auto none = run_cmd(test::mbpsim_bin() + " stats-doc " + test::config_path("default.json") + " --prefix no.such");
  EXPECT_EQ(none.status, 1);
  EXPECT_EQ(count_lines(none.output), 1) << none.output;
  EXPECT_NE(none.output.find("no statistic starts with 'no.such'"), std::string::npos) << none.output;
  const auto misplaced = run_cmd(test::mbpsim_bin() + " validate " + test::config_path("default.json") + " --prefix x");
  EXPECT_EQ(misplaced.status, 1) << misplaced.output;
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
  for (const char* k : {"offered_rate", "accepted_rate", "avg_unicast_latency_cycles", "packets_delivered"})
    EXPECT_TRUE(st["summary"].contains(k)) << k;
  auto host = nlohmann::json::parse(test::read_text(d / "a" / "host.json"));
  for (const char* k : {"wall_seconds", "cpu_seconds", "events_per_second", "peak_memory_bytes"})
    EXPECT_TRUE(host.contains(k)) << k;
  EXPECT_GT(host["cpu_seconds"].get<double>(), 0.0);
  EXPECT_LT(host["cpu_seconds"].get<double>(), host["wall_seconds"].get<double>() * 2 + 1);
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

// An Ethernet system has no quad-tree network: its outputs describe only what it models (no
// idle routers in stats.json), and host.json counts the events of its own calendar.
TEST(Cli, EtherRunReportsOnlyTheModelledSystem) {
  auto d = test::temp_dir("cli_ether");
  auto r = run_cmd(test::mbpsim_bin() + " run " + test::config_path("mbcf-ultra60-1000sx.json") +
                   " --quiet --set workload.kind=peak --set 'workload.sizes=[64]' --out " + d.string());
  ASSERT_EQ(r.status, 0) << r.output;
  auto st = nlohmann::json::parse(test::read_text(d / "stats.json"));
  const auto& sys = st["stats"]["system"];
  EXPECT_FALSE(sys.contains("net")) << sys.dump();
  ASSERT_TRUE(sys.contains("ether"));
  EXPECT_GT(sys["ether"]["frames"].get<uint64_t>(), 1000u);
  // 100 MHz network clock (the runner's slice unit): cycles = simulated seconds x 1e8.
  EXPECT_NEAR(st["run"]["simulated_cycles"].get<double>(), st["run"]["simulated_seconds"].get<double>() * 1e8, 1.0);
  auto host = nlohmann::json::parse(test::read_text(d / "host.json"));
  EXPECT_GT(host["events"].get<uint64_t>(), 1000u);
  EXPECT_EQ(host["events"], host["mbcf_events"]);
  EXPECT_FALSE(host.contains("packets_delivered_total"));
  // The first line says the simulated time, in one unit.
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(: [0-9.]+ (s|ms|us) simulated in [0-9.]+ s of wall time)"))) << r.output;
}

// A summary list of records (the points of rtt, oneway and peak; the protection tester's
// attacks) prints as a table, one row per record, at most 40 rows; it used to say only
// "(in stats.json)".
TEST(Cli, SummaryPointsPrintAsATable) {
  const auto d = test::temp_dir("cli_table");
  auto r = run_cmd(test::mbpsim_bin() + " run " + test::config_path("mbcf-ss20-100tx.json") +
                   " --quiet --set 'workload.sizes=[4,1024]' --set workload.transfers=64 --out " + d.string());
  ASSERT_EQ(r.status, 0) << r.output;
  // A point's value keeps six significant digits (three decimals left a 0.3 MB/s rate three).
  const double v = nlohmann::json::parse(test::read_text(d / "stats.json"))["summary"]["points"][0]["value"].get<double>();
  EXPECT_NE(v, std::round(v * 1000) / 1000) << v;
  EXPECT_NEAR(v * 1e6, std::round(v * 1e6), 1e-6) << v;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\n  points\n +command +size +value unit +host_cpu_us_per_op\n)"))) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\n +MBCF_WRITE +4 +0\.[0-9]+ MB/s +1[0-9.]+\n)"))) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\n +MBCF_WRITE +1024 +11\.[0-9]+ MB/s +[0-9.]+\n)"))) << r.output;
  EXPECT_EQ(r.output.find("(in stats.json)"), std::string::npos) << r.output;
  r = run_cmd(test::mbpsim_bin() + " run " + test::config_path("protection-ether.json") + " --quiet --out " +
              test::temp_dir("cli_table2").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\n +forged_key +key +pass +violation\n)"))) << r.output;
  EXPECT_NE(r.output.find("    (8 more in stats.json)\n"), std::string::npos) << r.output;
}

// The trace tools on a small two-thread trace: info, validate, convert both ways, and a broken
// trace that exits 1 with one line naming the file, the thread and the record.
TEST(Cli, TraceToolsInfoValidateConvert) {
  auto d = test::temp_dir("cli_trace");
  const auto t = d / "t";
  std::filesystem::create_directories(t);
  test::write_text(t / "trace.meta", "mbpsim-trace 1\nprogram kernel\nthreads 2\nencoding text\nalloc 0x40000000 8192\n");
  test::write_text(t / "thread-0.txt",
                   "mbpsim-trace-stream 1 thread 0\n0 begin\n0 create 1\n4 store 0x40000000 8\n0 barrier 0x40001000 2 0\n"
                   "2 load 0x40000040 8\n0 join 1\n0 end\nend-of-stream 7\n");
  test::write_text(t / "thread-1.txt",
                   "mbpsim-trace-stream 1 thread 1\n0 begin\n1 acquire 0x40001040 0\n3 rmw 0x40000080 4 add\n0 release 0x40001040\n"
                   "0 barrier 0x40001000 2 0\n0 end\nend-of-stream 6\n");
  auto r = run_cmd(test::mbpsim_bin() + " trace info " + t.string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("references     3: 1 loads, 1 stores, 1 atomic read-modify-writes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("footprint      3 lines"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("barrier 2"), std::string::npos) << r.output;
  r = run_cmd(test::mbpsim_bin() + " trace validate " + t.string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("ok (13 records"), std::string::npos) << r.output;
  r = run_cmd(test::mbpsim_bin() + " trace convert " + t.string() + " " + (d / "b").string() + " --to binary-gzip");
  EXPECT_EQ(r.status, 0) << r.output;
  // An existing trace is replaced only when asked (it used to be replaced silently).
  const std::string b_meta = test::read_text(d / "b" / "trace.meta");
  r = run_cmd(test::mbpsim_bin() + " trace convert " + t.string() + " " + (d / "b").string() + " --to text");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("exists; trace convert replaces it only with --force"), std::string::npos) << r.output;
  EXPECT_EQ(test::read_text(d / "b" / "trace.meta"), b_meta);
  r = run_cmd(test::mbpsim_bin() + " trace convert " + t.string() + " " + (d / "b").string() + " --to binary-gzip --force");
  EXPECT_EQ(r.status, 0) << r.output;
  r = run_cmd(test::mbpsim_bin() + " trace convert " + (d / "b").string() + " " + (d / "back").string() + " --to text");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(test::read_text(d / "back" / "thread-1.txt"), test::read_text(t / "thread-1.txt"));
  // Broken: thread 1 releases a lock it never took.
  test::write_text(t / "thread-1.txt",
                   "mbpsim-trace-stream 1 thread 1\n0 begin\n0 release 0x40001040\n0 barrier 0x40001000 2 0\n0 end\nend-of-stream 4\n");
  r = run_cmd(test::mbpsim_bin() + " trace validate " + t.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find("thread-1.txt: thread 1, record 1 (release 0x40001040): release of a lock this thread does not hold"),
            std::string::npos)
      << r.output;
  for (const std::string args : {"trace", "trace info", "trace bogus x", "trace convert a b --to xml", "trace info /nonexistent"}) {
    r = run_cmd(test::mbpsim_bin() + " " + args);
    EXPECT_EQ(r.status, 1) << args;
  }
}

}  // namespace
}  // namespace mbpsim
