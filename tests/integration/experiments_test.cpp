// The shipped configs, run as a user would, and the BookSim2 cross-validation.
#include <gtest/gtest.h>

#include "models/core/rng.h"
#include "tests/test_util.h"

namespace mbpsim {
namespace {

nlohmann::json run_config(const std::string& name, const std::string& sets) {
  const auto r = test::run_config(name, sets);
  EXPECT_EQ(r.status, 0) << r.command << "\n" << r.output;
  return r.stats;
}

TEST(Experiments, EveryShippedConfigValidatesAndRuns) {
  for (const auto& e : std::filesystem::directory_iterator(std::string(MBPSIM_SOURCE_DIR) + "/configs")) {
    if (e.path().extension() != ".json") continue;
    const std::string name = e.path().filename().string();
    // Cut short, most configs end at their limit (status 3, named on stderr) before their
    // workload is done; each still writes its results.
    const auto r = test::run_config(name, "--set workload.measure_cycles=2000 --set workload.warmup_cycles=0 "
                                          "--set workload.max_cycles=20000");
    EXPECT_TRUE(r.status == 0 || r.status == 3) << r.command << "\n" << r.output;
    if (r.status == 3) {
      EXPECT_NE(r.output.find("the run reached its limit, workload."), std::string::npos) << r.output;
    }
    ASSERT_TRUE(r.stats.contains("summary")) << name;
  }
}

TEST(Experiments, Figure27ConfigSummary) {
  auto st = run_config("fig2-7-multicast.json", "");
  EXPECT_EQ(st["summary"]["multicast_receivers"], 6);
  EXPECT_EQ(st["summary"]["dummy_acks"], 1);
  EXPECT_EQ(st["summary"]["acks_at_source"], 1);
}

// BookSim2's 64-node qtree, measured on this machine class (see docs/VALIDATION.md).
TEST(BookSimCrossValidation, LatencyWithinTenPercent) {
  const std::vector<std::pair<double, double>> ref = {{0.01, 19.62}, {0.05, 21.97}};
  for (auto [rate, lat] : ref) {
    auto st = run_config("net-qtree64-booksim.json", "--set workload.injection_rate=" + std::to_string(rate));
    const double got = st["summary"]["avg_unicast_latency_cycles"];
    EXPECT_NEAR(got, lat, 0.10 * lat) << "rate " << rate;
    EXPECT_FALSE(st["summary"]["saturated"].get<bool>());
  }
}

TEST(BookSimCrossValidation, SaturationWithinTenPercent) {
  // BookSim2: stable at 0.06 (43.07 cycles), unstable from 0.065; accepted throughput
  // under overload 0.061 flits/node/cycle.
  // Overloaded, the run ends at workload.drain_cycles with packets in flight: status 3.
  const auto r = test::run_config("net-qtree64-booksim.json", "--set workload.injection_rate=0.1");
  EXPECT_EQ(r.status, 3) << r.output;
  const auto& over = r.stats;
  const double thr = over["summary"]["accepted_rate"];
  EXPECT_NEAR(thr, 0.061, 0.1 * 0.061);
  EXPECT_TRUE(over["summary"]["saturated"].get<bool>());
  auto below = run_config("net-qtree64-booksim.json", "--set workload.injection_rate=0.055");
  EXPECT_FALSE(below["summary"]["saturated"].get<bool>());
}

// The network's fast path (network.fast_path: a router holding a single flit takes its cycle
// without scanning its ports and VCs) is host speed only: every statistic equals the general
// allocators' run, byte for byte, on unicast traffic below and near saturation, multicasts of
// several flits with acknowledge combining, and the MBP's coherence traffic.
TEST(NetworkFastPath, StatisticsEqualTheGeneralAllocators) {
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"net-qtree64-uniform.json", "--set workload.injection_rate=0.01 --set workload.measure_cycles=4000"},
      {"net-qtree64-uniform.json", "--set workload.injection_rate=0.055 --set workload.measure_cycles=4000"},
      {"default.json", ""},
      {"fig2-7-multicast.json", ""},
      {"mbp16.json", "--set sharing.refs_per_proc=1500"},
  };
  for (const auto& [config, sets] : runs) {
    const auto fast = run_config(config, sets + " --set network.fast_path=true");
    const auto general = run_config(config, sets + " --set network.fast_path=false");
    ASSERT_TRUE(fast.contains("stats") && general.contains("stats")) << config;
    EXPECT_EQ(fast["run"], general["run"]) << config << " " << sets;
    EXPECT_EQ(fast["summary"], general["summary"]) << config << " " << sets;
    EXPECT_TRUE(fast["stats"] == general["stats"]) << config << " " << sets << ": statistics differ";
    // The runs did route traffic (a vacuous comparison would pass too).
    EXPECT_GT(fast["stats"]["system"]["net"]["packets_delivered"].get<uint64_t>(), 0u) << config;
  }
}

// ...and it is taken: host.json counts the router cycles stepped and those that took the
// lone-flit path (the comparison above would pass if the path were never taken). At 0.01
// flits/node/cycle most busy routers hold one flit (82% on 2026-12-05); with the path off, none
// of the same cycles takes it.
TEST(NetworkFastPath, RoutersHoldingOneFlitTakeIt) {
  // (Express hops off: they take most lone hops without a router step at all.)
  const std::string sets = "--set workload.injection_rate=0.01 --set workload.measure_cycles=4000 --set network.express_hops=false";
  const auto fast = test::run_ok("net-qtree64-uniform.json", sets + " --set network.fast_path=true");
  const auto general = test::run_ok("net-qtree64-uniform.json", sets + " --set network.fast_path=false");
  const auto hf = fast.host(), hg = general.host();
  const double steps = hf.at("router_steps").get<double>();
  ASSERT_GT(steps, 10000);
  EXPECT_EQ(hf["router_steps"], hg["router_steps"]) << "the same cycles are stepped either way";
  EXPECT_GT(hf.at("router_lone_steps").get<double>() / steps, 0.6);
  EXPECT_EQ(hg.at("router_lone_steps").get<uint64_t>(), 0u);
}

// Express hops (network.express_hops: a one-flit unicast that arrives alone at a router holding
// nothing crosses it at once, stamped with the cycle the pipeline would cross it in) are host
// speed only: every statistic equals the pipeline's, byte for byte, wherever they are taken.
// Runs `config` with `sets` with express hops on and off: the same exit status, run, summary and
// statistics, and none taken with them off. `express`: the hops taken with them on.
void expect_express_equals_pipeline(const std::string& config, const std::string& sets, uint64_t& express) {
  const auto on = test::run_config(config, sets + " --set network.express_hops=true");
  const auto off = test::run_config(config, sets + " --set network.express_hops=false");
  ASSERT_TRUE(on.stats.contains("stats") && off.stats.contains("stats")) << on.command << "\n" << on.output;
  EXPECT_EQ(on.status, off.status) << on.command;
  EXPECT_EQ(on.stats["run"], off.stats["run"]) << on.command;
  EXPECT_EQ(on.stats["summary"], off.stats["summary"]) << on.command;
  EXPECT_TRUE(on.stats["stats"] == off.stats["stats"]) << on.command << ": statistics differ";
  EXPECT_EQ(off.host().at("router_express_hops").get<uint64_t>(), 0u) << off.command;
  express = on.host().at("router_express_hops").get<uint64_t>();
}

// The runs press on what an express hop must keep as the pipeline has it: VCs and credits that
// run short (one VC per class, two-flit buffers, slow credits: its output VC held until it
// crosses, a flit queued behind it on its input VC), longer pipelines (route computation and VC
// allocation of 1-3 cycles), a hot spot at low load (the network's own clock between its busy
// cycles: the utilisation's epoch), multicasts whose end-to-end acknowledgements take express
// hops, and one-cycle slices (no hop may cross past the runner's slice).
TEST(NetworkExpressHops, StatisticsEqualThePipelines) {
  const std::string u = "net-qtree64-uniform.json";
  const std::vector<std::pair<std::string, std::string>> runs = {
      {u, "--set workload.injection_rate=0.01 --set workload.measure_cycles=4000"},
      {u, "--set workload.injection_rate=0.055 --set workload.measure_cycles=4000"},
      {u, "--set workload.injection_rate=0.03 --set workload.measure_cycles=3000 --set network.vcs_per_class=1 "
          "--set network.buffer_depth=2 --set network.credit_delay=4"},
      {u, "--set workload.injection_rate=0.03 --set workload.measure_cycles=3000 --set network.routing_delay=1 "
          "--set network.va_delay=2 --set network.vcs_per_class=1"},
      {u, "--set workload.injection_rate=0.005 --set workload.measure_cycles=1000 --set network.levels=2 "
          "--set workload.pattern=hotspot --set network.routing_delay=2 --set network.va_delay=3 "
          "--set network.vcs_per_class=2 --set network.buffer_depth=4 --set network.link_latency=2 --seed 241"},
      {"default.json", "--set workload.packet_flits=1 --set workload.measure_cycles=3000 --set network.combining=false "
                       "--set workload.injection_rate=0.01"},
      {u, "--set workload.injection_rate=0.02 --set workload.measure_cycles=1000 --set experiment.heartbeat_s=1e-9"},
      // 2-flit multicasts and their 1-flit acknowledgements, uncombined: packets of two lengths,
      // and an ack may arrive on a port whose multicast's body flit is still to come (a wider
      // express rule, tried and not kept, missed that: docs/PERFORMANCE.md, 2026-12-07).
      {u, "--set workload.pattern=multicast --set network.combining=false --set workload.packet_flits=2 "
          "--set workload.injection_rate=0.02 --set workload.measure_cycles=3000 --seed 786"},
  };
  for (const auto& [config, sets] : runs) {
    uint64_t express = 0;
    expect_express_equals_pipeline(config, sets, express);
    if (HasFatalFailure()) return;
    // Express hops were taken (a vacuous comparison would pass too).
    EXPECT_GT(express, 0u) << config << " " << sets;
  }
  // At 0.01 flits/node/cycle most router traversals are express hops (68% on 2026-12-07), and
  // the routers step less than half as often (a quarter on 2026-12-07).
  const auto on = test::run_ok(u, "--set workload.injection_rate=0.01 --set workload.measure_cycles=20000");
  const auto off = test::run_ok(u, "--set workload.injection_rate=0.01 --set workload.measure_cycles=20000 --set network.express_hops=false");
  uint64_t traversals = 0;
  for (const auto& [name, r] : on.stats["stats"]["system"]["net"].items())
    if (name.rfind("router_", 0) == 0)
      for (const auto& [stat, v] : r.items())
        if (stat.rfind("port", 0) == 0) traversals += v["flits"].get<uint64_t>();
  const auto ho = on.host(), hf = off.host();
  EXPECT_GT(ho.at("router_express_hops").get<double>(), 0.5 * static_cast<double>(traversals));
  EXPECT_LT(ho.at("router_steps").get<double>(), 0.5 * hf.at("router_steps").get<double>());
}

// ...and over configurations drawn at random: VCs, buffers, the pipeline's and the credits'
// delays, flit widths, packet lengths, 16 and 64 nodes, four traffic patterns (multicasts with
// and without acknowledgements and combining), loads from 0.005 to 0.2. Each run with express
// hops equals the same run without, statistic for statistic. The draws come from a fixed seed
// (replay one: its command is in the failure message; another sample: change kSeed). A search
// of this kind found the case the fixed runs above had missed (2026-12-07).
TEST(NetworkExpressHops, RandomConfigurationsEqualThePipelines) {
  constexpr uint64_t kSeed = 20261207;
  constexpr int kRuns = 24;
  Rng rng(kSeed, "express-differential");
  auto pick = [&](std::initializer_list<const char*> xs) { return *(xs.begin() + rng.below(xs.size())); };
  auto in = [&](int lo, int hi) { return std::to_string(lo + static_cast<int>(rng.below(static_cast<uint64_t>(hi - lo + 1)))); };
  int took = 0;
  for (int i = 0; i < kRuns; ++i) {
    const std::string pattern = pick({"uniform", "hotspot", "bitcomp", "multicast", "multicast-nocomb", "multicast-noack"});
    const bool mc = pattern.rfind("multicast", 0) == 0;
    std::string sets = std::string("--set workload.measure_cycles=") + pick({"1000", "3000"}) +
                       " --set workload.warmup_cycles=500 --set workload.drain_cycles=3000 --set network.levels=" + in(2, 3) +
                       " --set network.vcs_per_class=" + in(1, 4) +
                       // a multicast moves by virtual cut-through: its buffers hold a whole packet
                       " --set network.buffer_depth=" + (mc ? "8" : pick({"1", "2", "4", "8"})) +
                       " --set network.credit_delay=" + in(1, 5) + " --set network.routing_delay=" + in(0, 2) +
                       " --set network.va_delay=" + in(1, 3) + " --set network.link_latency=" + in(1, 3) +
                       " --set network.sa_delay=" + in(1, 2) + " --set network.st_delay=" + in(0, 2) +
                       " --set network.flit_bits=" + pick({"64", "128"}) +
                       " --set workload.injection_rate=" + pick({"0.005", "0.02", "0.05", "0.1", "0.2"}) +
                       " --set workload.packet_flits=" + pick({"1", "1", "1", "2"}) + " --seed " + in(1, 1000) +
                       " --set workload.pattern=" + (mc ? "multicast" : pattern);
    if (pattern == "multicast-nocomb") sets += " --set network.combining=false";
    if (pattern == "multicast-noack") sets += " --set workload.multicast_ack=false";
    uint64_t express = 0;
    expect_express_equals_pipeline("net-qtree64-uniform.json", sets, express);
    if (HasFatalFailure()) return;
    took += express > 0;
  }
  // Not a vacuous comparison: most of the draws take express hops (15 of 24 on 2026-12-07; the
  // others carry only 2-flit packets, which take none, or saturate).
  EXPECT_GE(took, kRuns / 2);
}

// ...and are never taken where the order of one cycle's events matters: the MBP's coherence
// traffic (its callbacks schedule into a calendar whose ties follow call order), multicasts
// with acknowledgements combined in the routers (two transactions' acknowledgements completed
// in one cycle queue at the generator in arrival order), or a run that records a timeline.
TEST(NetworkExpressHops, AreNotTakenWhereTheOrderOfACyclesEventsMatters) {
  for (const auto& [config, sets] : std::vector<std::pair<std::string, std::string>>{
           {"mbp16.json", "--set sharing.refs_per_proc=300"},
           {"default.json", "--set workload.packet_flits=1 --set workload.measure_cycles=2000"},
           {"net-qtree64-uniform.json", "--set workload.injection_rate=0.01 --set workload.measure_cycles=1000 --timeline " +
                                            (test::temp_dir("express_timeline") / "t.json").string()}}) {
    const auto r = test::run_ok(config, sets);
    EXPECT_GT(r.stats["stats"]["system"]["net"]["packets_delivered"].get<uint64_t>(), 0u) << config;
    EXPECT_EQ(r.host().at("router_express_hops").get<uint64_t>(), 0u) << config << " " << sets;
  }
}

// The network's run-ahead (network.run_ahead: when the client reads time only from the
// network, one SystemC activation runs the busy cycles up to the end of the runner's slice
// while nothing else in the simulation is due) is host speed only: every statistic equals one
// activation per busy cycle, byte for byte, with the runner's usual slices and with one-cycle
// slices (a heartbeat so short that each slice is one cycle: no cycle may then run ahead).
TEST(NetworkRunAhead, StatisticsEqualOneActivationPerBusyCycle) {
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"net-qtree64-uniform.json", "--set workload.injection_rate=0.01 --set workload.measure_cycles=4000"},
      {"net-qtree64-uniform.json", "--set workload.injection_rate=0.055 --set workload.measure_cycles=4000"},
      {"default.json", "--set workload.measure_cycles=4000"},
      {"fig2-7-multicast.json", ""},
  };
  for (const auto& [config, sets] : runs) {
    const auto ahead = test::run_ok(config, sets + " --set network.run_ahead=true");
    const auto each = test::run_ok(config, sets + " --set network.run_ahead=false");
    const auto stepped = test::run_ok(config, sets + " --set network.run_ahead=true --set experiment.heartbeat_s=1e-9");
    ASSERT_TRUE(ahead.stats.contains("stats") && each.stats.contains("stats")) << config;
    EXPECT_EQ(ahead.stats["run"], each.stats["run"]) << config << " " << sets;
    EXPECT_EQ(ahead.summary(), each.summary()) << config << " " << sets;
    EXPECT_TRUE(ahead.stats["stats"] == each.stats["stats"]) << config << " " << sets << ": statistics differ";
    EXPECT_TRUE(stepped.stats["stats"] == each.stats["stats"]) << config << " " << sets << ": one-cycle slices differ";
    // The runs did route traffic, and cycles did run ahead (a vacuous comparison would pass too).
    EXPECT_GT(each.stats["stats"]["system"]["net"]["packets_delivered"].get<uint64_t>(), 0u) << config;
    EXPECT_GT(ahead.host().at("network_run_ahead_cycles").get<uint64_t>(), 0u) << config;
    EXPECT_EQ(each.host().at("network_run_ahead_cycles").get<uint64_t>(), 0u) << config;
  }
  // At 0.01 flits/node/cycle nearly every busy cycle after a slice's first runs ahead.
  const auto low = test::run_ok("net-qtree64-uniform.json",
                                "--set workload.injection_rate=0.01 --set workload.measure_cycles=20000");
  const auto h = low.host();
  EXPECT_GT(h.at("network_run_ahead_cycles").get<double>(), 0.9 * low.stats["run"]["simulated_cycles"].get<double>());
}

// A run that fails in a cycle run ahead (here the watchdog: receiver 9 never acknowledges)
// stops at that cycle's own time, as one activation per cycle does: the same simulated cycles,
// the same failure. The multicast starts at the window's last cycle, so its deliveries and the
// watchdog's cycle, 101 cycles later, fall in one of the runner's 200-cycle drain slices: the
// network runs ahead from the last delivery to the watchdog. (Stopping SystemC at once there
// ended the run at cycle 200, where that activation began.)
TEST(NetworkRunAhead, AFailureInACycleRunAheadStopsTheRunAtThatCycle) {
  auto d = test::temp_dir("runahead_watchdog");
  test::write_text(d / "c.json", R"({"network": {"levels": 2, "watchdog_cycles": 100},
    "workload": {"kind": "script", "measure_cycles": 200, "drain_cycles": 5000,
                 "script": [{"cycle": 199, "src": 4, "dests": [5, 9], "silent": [9]}]}})");
  const auto ahead = test::run_config((d / "c.json").string(), "--seed 7 --set network.run_ahead=true");
  const auto each = test::run_config((d / "c.json").string(), "--seed 7 --set network.run_ahead=false");
  ASSERT_EQ(ahead.status, 2) << ahead.output;
  ASSERT_EQ(each.status, 2) << each.output;
  EXPECT_EQ(each.stats["run"]["simulated_cycles"], 314) << each.stats["run"];
  EXPECT_EQ(ahead.stats["run"], each.stats["run"]);
  EXPECT_TRUE(ahead.stats["stats"] == each.stats["stats"]);
}

// The MBP's calendar reads SystemC's clock, so a network serving it keeps one activation per
// busy cycle.
TEST(NetworkRunAhead, TheMbpKeepsOneActivationPerBusyCycle) {
  const auto r = test::run_ok("mbp16.json", "--set sharing.refs_per_proc=300");
  const auto h = r.host();
  EXPECT_GT(r.stats["stats"]["system"]["net"]["packets_delivered"].get<uint64_t>(), 0u);
  EXPECT_EQ(h.at("network_run_ahead_cycles").get<uint64_t>(), 0u);
}

}  // namespace
}  // namespace mbpsim
