// Trace replay on the MBP machine: synchronisation semantics (locks exclude, barriers wait for
// everyone, joins wait for the end), determinism, placement, the shipped sample, bad input.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace mbpsim {
namespace {

std::string make_trace(const std::string& name, const std::vector<std::string>& threads) {
  return test::write_text_trace(test::temp_dir("replay_" + name) / "t", threads);
}

nlohmann::json config(const std::string& trace, uint32_t levels = 1) {
  return {{"network", {{"radix", 4}, {"levels", levels}}},
          {"node", {{"procs", 2}}},
          {"mbp", {{"home_policy", "first_touch"}}},
          {"workload", {{"kind", "trace"}}},
          {"trace", {{"path", trace}}}};
}

double thread_field(const nlohmann::json& s, int t, const char* f) { return s["per_thread"][t][f].get<double>(); }

// 200 MHz processors, CPI 1: a gap of 1,000,000 instructions is 5 ms.
constexpr double kLongGapS = 1e6 * 5e-9;

TEST(TraceReplay, ALockHolderExcludesTheNextAcquirer) {
  // Thread 0 computes for 5 ms inside its critical section; thread 1's acquisition comes
  // next in the captured order, so it waits at least that long.
  const auto tr = make_trace("lock", {"0 begin\n0 create 1\n0 acquire 0x40001000 0\n1000000 store 0x40000000 8\n0 release 0x40001000\n0 join 1\n0 end\n",
                                      "0 begin\n10 acquire 0x40001000 1\n0 store 0x40000000 8\n0 release 0x40001000\n0 end\n"});
  auto c = config(tr);
  c["trace"]["sync"] = "recorded";
  const auto s = test::run_in_process(c, "lock");
  ASSERT_TRUE(s["summary"]["finished"].get<bool>());
  const auto& sum = s["summary"];
  EXPECT_GE(thread_field(sum, 1, "sync_s"), kLongGapS);
  EXPECT_GE(thread_field(sum, 0, "busy_s"), kLongGapS * 0.99);
  EXPECT_LT(thread_field(sum, 0, "sync_s"), kLongGapS / 10);
  // The waiter does not spin on the lock word: its one compare&swap comes after the holder's
  // release has been performed, and succeeds.
  EXPECT_EQ(sum["lock_retries"].get<int>(), 0);
}

// trace.sync: the captured order says thread 1 took the lock first (its acquisition is #0),
// but in simulated time thread 0 gets there first and holds it for 5 ms; thread 1 arrives
// 2.5 ms in. Simulated (the default) grants it to thread 0, and thread 1 waits 2.5 ms;
// recorded makes thread 0 wait until thread 1 has had its turn at 2.5 ms. Mutual exclusion
// holds either way (checked on the lock word's values).
std::string lock_order_trace() {
  return make_trace("lock_order", {"0 begin\n0 create 1\n0 acquire 0x40001000 1\n1000000 store 0x40000000 8\n0 release 0x40001000\n0 join 1\n0 end\n",
                                   "0 begin\n500000 acquire 0x40001000 0\n0 store 0x40000000 8\n0 release 0x40001000\n0 end\n"});
}

TEST(TraceReplay, SimulatedOrderGrantsALockToWhoeverComesFirst) {
  const auto s = test::run_in_process(config(lock_order_trace()), "lock_order_simulated")["summary"];
  ASSERT_TRUE(s["finished"].get<bool>());
  EXPECT_LT(thread_field(s, 0, "sync_s"), kLongGapS / 10);  // thread 0 went first
  EXPECT_NEAR(thread_field(s, 1, "sync_s"), kLongGapS / 2, kLongGapS / 20);  // thread 1 waited for its release
  EXPECT_GE(s["lock_retries"].get<int>(), 1);  // thread 1's try found the lock held
  EXPECT_NEAR(s["exec_time_s"].get<double>(), kLongGapS, kLongGapS / 20);
}

TEST(TraceReplay, RecordedOrderGrantsALockInTheCapturedOrder) {
  auto c = config(lock_order_trace());
  c["trace"]["sync"] = "recorded";
  const auto s = test::run_in_process(c, "lock_order_recorded")["summary"];
  ASSERT_TRUE(s["finished"].get<bool>());
  EXPECT_NEAR(thread_field(s, 0, "sync_s"), kLongGapS / 2, kLongGapS / 20);  // thread 0 waited for thread 1's turn
  EXPECT_LT(thread_field(s, 1, "sync_s"), kLongGapS / 10);
  EXPECT_NEAR(s["exec_time_s"].get<double>(), 1.5 * kLongGapS, kLongGapS / 20);
}

// Data handed through a lock: thread 0 took the lock first in the capture (#0) and stored
// what thread 1 then read under it (#1). In simulated time thread 1 gets there 5 ms earlier.
// Without a dep, simulated order hands it the lock first, before the data exists; the dep the
// capture puts in front of its acquire (thread 0's record #3, the store) makes it wait.
std::string hand_off_trace(bool dep) {
  return make_trace(dep ? "hand_off" : "no_hand_off",
                    {"0 begin\n0 create 1\n1000000 acquire 0x40001000 0\n0 store 0x40000000 8\n0 release 0x40001000\n0 join 1\n0 end\n",
                     std::string("0 begin\n") + (dep ? "0 dep 0 3\n" : "") + "0 acquire 0x40001000 1\n0 load 0x40000000 8\n0 release 0x40001000\n0 end\n"});
}

TEST(TraceReplay, ADepMakesTheReaderOfHandedDataWaitForTheWriter) {
  const auto s = test::run_in_process(config(hand_off_trace(true)), "hand_off")["summary"];
  ASSERT_TRUE(s["finished"].get<bool>());
  EXPECT_EQ(s["hand_off_waits"].get<int>(), 1);
  EXPECT_GE(thread_field(s, 1, "sync_s"), kLongGapS * 0.99);  // waited for the store
  EXPECT_GE(thread_field(s, 1, "end_s"), kLongGapS);
  EXPECT_LT(thread_field(s, 0, "sync_s"), kLongGapS / 10);  // and never held the lock against it
}

TEST(TraceReplay, WithoutADepTheReaderTakesTheLockFirst) {
  const auto s = test::run_in_process(config(hand_off_trace(false)), "no_hand_off")["summary"];
  ASSERT_TRUE(s["finished"].get<bool>());
  EXPECT_EQ(s["hand_off_waits"].get<int>(), 0);
  EXPECT_LT(thread_field(s, 1, "sync_s"), kLongGapS / 10);
  EXPECT_LT(thread_field(s, 1, "end_s"), kLongGapS / 10);
}

TEST(TraceReplay, ABarrierReleasesOnlyWhenAllHaveArrived) {
  // Thread 2 arrives 5 ms late; threads 0 and 1 wait for it, then all run on.
  const auto tr = make_trace("barrier", {"0 begin\n0 create 1\n0 create 2\n0 barrier 0x40002000 3 0\n5 load 0x40000000 8\n0 join 1\n0 join 2\n0 end\n",
                                         "0 begin\n0 barrier 0x40002000 3 0\n5 load 0x40000040 8\n0 end\n",
                                         "0 begin\n1000000 store 0x40000080 8\n0 barrier 0x40002000 3 0\n0 end\n"});
  const auto s = test::run_in_process(config(tr), "barrier");
  const auto& sum = s["summary"];
  ASSERT_TRUE(sum["finished"].get<bool>());
  EXPECT_GE(thread_field(sum, 0, "sync_s"), kLongGapS * 0.99);
  EXPECT_GE(thread_field(sum, 1, "sync_s"), kLongGapS * 0.99);
  EXPECT_LT(thread_field(sum, 2, "sync_s"), kLongGapS / 10);
  EXPECT_GE(thread_field(sum, 1, "end_s"), kLongGapS);
}

// An arrival's fetch&add answer can come back after its barrier episode has already opened: a
// far node's answer is still in the network when the home's own last arriver has read the
// counter, swapped the episode word and opened the next episode. VOLREND's trace (16 threads,
// 576 barriers) found it: the late answer was counted against the next episode's base
// ("barrier counter says 18446744073709551615 arrivals"), an internal error: the home's own
// thread arrived last, right behind a far thread queued at the home, and its answer and its
// swap came back before the far thread's answer. Sixteen threads, one per node, meet at 400
// barriers; each reads a word beside the barrier's first (as VOLREND's globals sit beside its
// barrier), so the home's atomics wait on invalidation rounds.
TEST(TraceReplay, ALateArrivalAnswerCountsForItsOwnEpisode) {
  constexpr int kThreads = 16, kEpisodes = 600;
  std::vector<std::string> th(kThreads);
  th[0] = "0 begin\n0 load 0x40002000 8\n";  // the barrier's page is homed on thread 0's node
  for (int t = 1; t < kThreads; ++t) th[0] += "0 create " + std::to_string(t) + "\n";
  for (int t = 1; t < kThreads; ++t) th[t] = "0 begin\n";
  for (int e = 0; e < kEpisodes; ++e)
    for (int t = 0; t < kThreads; ++t) {
      // The others arrive together and queue at the home; the home's own thread 7 instructions
      // later each episode (modulo 2,000), sweeping across the time their answers are in flight.
      th[t] += std::to_string(t == 0 ? (e * 7) % 2000 : 0) + " load 0x40002010 8\n";
      th[t] += "0 barrier 0x40002000 " + std::to_string(kThreads) + " " + std::to_string(e) + "\n";
    }
  for (int t = 1; t < kThreads; ++t) th[0] += "0 join " + std::to_string(t) + "\n";
  for (int t = 0; t < kThreads; ++t) th[t] += "0 end\n";
  const auto tr = make_trace("late_arrival", th);
  auto c = config(tr, 2);
  c["trace"]["placement"] = "spread";
  const auto s = test::run_in_process(c, "late_arrival");
  ASSERT_TRUE(s["summary"]["finished"].get<bool>());
}

TEST(TraceReplay, AJoinWaitsForTheThreadsEnd) {
  const auto tr = make_trace("join", {"0 begin\n0 create 1\n0 join 1\n0 end\n", "0 begin\n1000000 store 0x40000000 8\n0 end\n"});
  const auto s = test::run_in_process(config(tr), "join");
  const auto& sum = s["summary"];
  ASSERT_TRUE(sum["finished"].get<bool>());
  EXPECT_GE(thread_field(sum, 0, "end_s"), thread_field(sum, 1, "end_s"));
  EXPECT_GE(thread_field(sum, 0, "sync_s"), kLongGapS * 0.99);
}

TEST(TraceReplay, SemaphoresAndConditionsWaitForTheirWakeUp) {
  const auto tr = make_trace("sem", {"0 begin\n0 create 1\n1000000 post 0x40003000 0\n1000000 signal 0x40003040 0\n0 join 1\n0 end\n",
                                     "0 begin\n0 wait 0x40003000 0\n0 cwait 0x40003040 0\n0 end\n"});
  const auto s = test::run_in_process(config(tr), "sem");
  const auto& sum = s["summary"];
  ASSERT_TRUE(sum["finished"].get<bool>());
  EXPECT_GE(thread_field(sum, 1, "sync_s"), 2 * kLongGapS * 0.99);
}

TEST(TraceReplay, TheSampleReplaysOn16NodesDeterministically) {
  const auto cfg = nlohmann::json::parse(test::read_text(test::config_path("splash-mbp16.json")));
  auto c = cfg;
  c["trace"]["path"] = std::string(MBPSIM_SOURCE_DIR) + "/traces/stencil-16t";
  const auto a = test::run_in_process(c, "sample_a");
  const auto& s = a["summary"];
  ASSERT_TRUE(s["finished"].get<bool>());
  EXPECT_EQ(s["threads"], 16);
  EXPECT_EQ(s["references"], 311564);
  EXPECT_GT(s["coherence_rounds"].get<int>(), 0);
  const double sum = s["busy_fraction"].get<double>() + s["memory_stall_fraction"].get<double>() + s["sync_fraction"].get<double>();
  EXPECT_NEAR(sum, 1.0, 1e-9);
  // One thread per node: spread placement.
  for (int t = 0; t < 16; ++t) EXPECT_EQ(s["per_thread"][t]["node"], t);
  // Coherence traffic and network bytes per tree level (2 levels on 16 nodes).
  EXPECT_GT(s["coherence_messages"]["GetS"].get<int>(), 0);
  EXPECT_GT(s["coherence_messages"]["Inv"].get<int>(), 0);
  EXPECT_GT(s["multicast_fanout_mean"].get<double>(), 1.0);
  ASSERT_EQ(s["network_bytes_per_level"].size(), 2u);
  EXPECT_GT(s["network_bytes_per_level"][1]["up_bytes"].get<double>(), 0);
  EXPECT_EQ(s["network_bytes_per_level"][0]["up_bytes"].get<double>(), 0);  // the root has no parent
}

TEST(TraceReplay, SameSeedSameStats) {
  // Byte-identical stats.json from two runs of the sample (in subprocesses).
  std::string out[2];
  for (int i = 0; i < 2; ++i) {
    const auto r = test::run_config("splash-mbp16.json", std::string("--set trace.path=") + MBPSIM_SOURCE_DIR + "/traces/stencil-16t");
    ASSERT_EQ(r.status, 0) << r.output;
    out[i] = test::read_text(r.out / "stats.json");
  }
  EXPECT_EQ(out[0], out[1]);
}

// 64 threads contending for locks on 64 nodes (traces/stencil-64t, captured): responses of
// different threads come back in another order than the home performed their atomics. A
// driver that judged a compare&swap by what it had seen complete (not by the lock word)
// reported a broken mutual exclusion here, or lost the wake-up of a retry.
TEST(TraceReplay, SixtyFourThreadsContendingOnSixtyFourNodes) {
  const auto r = test::run_config("splash-mbp16.json", std::string("--set trace.path=") + MBPSIM_SOURCE_DIR +
                                                           "/traces/stencil-64t --set node.procs=1 --set network.levels=3");
  EXPECT_EQ(r.status, 0) << r.output;
}

nlohmann::json run_sample(const std::string& name, const std::string& sets) {
  const auto r = test::run_config("splash-mbp16.json", std::string("--set trace.path=") + MBPSIM_SOURCE_DIR + "/traces/stencil-16t " + sets);
  EXPECT_EQ(r.status, 0) << name << ": " << r.command << "\n" << r.output;
  return r.summary();
}

// The one-processor baseline: all 16 threads time-share node 0's first processor, switching
// when one blocks; its time makes the 16-node run report a speedup.
TEST(TraceReplay, OneProcessorBaselineGivesTheSpeedup) {
  const auto one = run_sample("one", "--set trace.placement=single --set trace.multiplex=true");
  ASSERT_TRUE(one["finished"].get<bool>());
  EXPECT_GT(one["context_switches"].get<int>(), 15);
  const double t1 = one["exec_time_s"].get<double>();
  const auto par = run_sample("par", "--set trace.baseline_s=" + std::to_string(t1));
  ASSERT_TRUE(par["finished"].get<bool>());
  const double tp = par["exec_time_s"].get<double>();
  EXPECT_LT(tp, t1);
  EXPECT_NEAR(par["speedup"].get<double>(), t1 / tp, 1e-3 * t1 / tp);
  // More threads than processors elsewhere too: 16 threads on 4 nodes x 2 processors.
  const auto shared = run_sample("shared", "--set trace.multiplex=true --set network.levels=1 --set node.procs=2");
  EXPECT_TRUE(shared["finished"].get<bool>());
  EXPECT_EQ(shared["references"], 311564);
  // Without multiplexing that is refused.
  auto r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("splash-mbp16.json") +
                         " --quiet --out /tmp/mbpsim_never --set trace.placement=single");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("set trace.multiplex"), std::string::npos) << r.output;
}

// scripts/trace-speedup.sh does both runs: the same speedup as by hand, folders for both.
TEST(TraceReplay, SpeedupScriptRunsTheBaselineItself) {
  const auto d = test::temp_dir("replay_speedup_script");
  auto r = test::run_cmd(std::string("MBPSIM=") + MBPSIM_BINARY + " bash " + MBPSIM_SOURCE_DIR + "/scripts/trace-speedup.sh " +
                         test::config_path("splash-mbp16.json") + " --out " + (d / "s").string() + " --set network.levels=1");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto one = nlohmann::json::parse(test::read_text(d / "s" / "baseline" / "stats.json"))["summary"];
  const auto par = nlohmann::json::parse(test::read_text(d / "s" / "parallel" / "stats.json"))["summary"];
  EXPECT_EQ(one["per_thread"][15]["node"], 0);  // every thread on node 0, processor 0
  EXPECT_EQ(one["per_thread"][15]["proc"], 0);
  EXPECT_EQ(par["per_thread"][15]["node"], 3);  // spread over the 4 nodes of one level
  const double t1 = one["exec_time_s"].get<double>(), tp = par["exec_time_s"].get<double>();
  EXPECT_NEAR(par["speedup"].get<double>(), t1 / tp, 1e-6 * t1 / tp);
  EXPECT_NE(r.output.find("speedup"), std::string::npos) << r.output;
  // The stencil trace has a region of interest: its speedup is printed from the two runs.
  char roi[128];
  std::snprintf(roi, sizeof roi, "region of interest: one processor %.6g s   parallel %.6g s   speedup %.3f", one["roi_time_s"].get<double>(),
                par["roi_time_s"].get<double>(), one["roi_time_s"].get<double>() / par["roi_time_s"].get<double>());
  EXPECT_NE(r.output.find(roi), std::string::npos) << r.output << "\nwanted: " << roi;
  // A bad config is one line and status 1, no results.
  r = test::run_cmd(std::string("bash ") + MBPSIM_SOURCE_DIR + "/scripts/trace-speedup.sh " + (d / "none.json").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("none.json: no such config file"), std::string::npos) << r.output;
}

TEST(TraceReplay, PackPlacementFillsANodeFirst) {
  auto c = config(make_trace("pack", {"0 begin\n0 create 1\n0 join 1\n0 end\n", "0 begin\n0 end\n"}));
  c["trace"]["placement"] = "pack";
  const auto s = test::run_in_process(c, "pack");
  EXPECT_EQ(s["summary"]["per_thread"][1]["node"], 0);
  EXPECT_EQ(s["summary"]["per_thread"][1]["proc"], 1);
}

// Fewer threads than nodes: spread puts them evenly over the tree (thread i on node
// floor(i x nodes / threads)), so the top routers carry traffic, and the run warns that nodes
// run no thread. Before, 16 threads sat on nodes 0-15, one subtree of 64 nodes, and gave the
// 16-node result with nothing through the root.
TEST(TraceReplay, SpreadPlacesFewerThreadsEvenlyOverTheTreeAndWarns) {
  const auto r = test::run_config("splash-mbp16.json", std::string("--set trace.path=") + MBPSIM_SOURCE_DIR +
                                                           "/traces/stencil-16t --set network.levels=3");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto s = r.summary();
  ASSERT_TRUE(s["finished"].get<bool>());
  for (int t = 0; t < 16; ++t) {
    EXPECT_EQ(s["per_thread"][t]["node"], 4 * t) << t;
    EXPECT_EQ(s["per_thread"][t]["proc"], 0) << t;
  }
  EXPECT_EQ(s["idle_nodes"], 48);
  EXPECT_NE(r.output.find("has 16 threads for 64 nodes (trace.placement spread): 48 nodes run no thread"), std::string::npos) << r.output;
  ASSERT_EQ(s["network_bytes_per_level"].size(), 3u);
  EXPECT_GT(s["network_bytes_per_level"][0]["down_bytes"].get<double>(), 0);  // through the root
  // As many threads as nodes: one each, in order, and no warning.
  const auto same = run_sample("spread16", "");
  EXPECT_EQ(same["idle_nodes"], 0);
  for (int t = 0; t < 16; ++t) EXPECT_EQ(same["per_thread"][t]["node"], t) << t;
}

// trace.placement map: each thread on the processor trace.map names (node x procs + proc).
TEST(TraceReplay, AMapPlacesEachThreadWhereItSaysAndABadMapIsRefused) {
  auto c = config(make_trace("map", {"0 begin\n0 create 1\n0 join 1\n0 end\n", "0 begin\n5 load 0x40000000 8\n0 end\n"}));
  c["trace"]["placement"] = "map";
  c["trace"]["map"] = {3, 6};  // node 1's second processor, node 3's first
  const auto s = test::run_in_process(c, "map");
  ASSERT_TRUE(s["summary"]["finished"].get<bool>());
  EXPECT_EQ(s["summary"]["per_thread"][0]["node"], 1);
  EXPECT_EQ(s["summary"]["per_thread"][0]["proc"], 1);
  EXPECT_EQ(s["summary"]["per_thread"][1]["node"], 3);
  EXPECT_EQ(s["summary"]["per_thread"][1]["proc"], 0);
  EXPECT_EQ(s["summary"]["idle_nodes"], 2);
  // Refused, exit 1, naming the key (and the entry): too few entries, no such processor, two
  // threads on one processor without trace.multiplex.
  auto list = [](int bad_at, int bad) {
    std::string l = "[";
    for (int t = 0; t < 16; ++t) l += (t ? "," : "") + std::to_string(t == bad_at ? bad : 4 * t);
    return l + "]";
  };
  // (Its own --out: these fail once the run holds its folder, so a shared one would collide
  // with other tests' runs.)
  const std::string run = test::mbpsim_bin() + " run " + test::config_path("splash-mbp16.json") + " --quiet --out " +
                          (test::temp_dir("replay_map_bad") / "out").string() + " --set trace.path=" +
                          MBPSIM_SOURCE_DIR + "/traces/stencil-16t --set trace.placement=map --set trace.map=";
  for (const auto& [map, says] : std::vector<std::pair<std::string, std::string>>{
           {"[0,4]", "trace.map: has 2 entries;"},
           {list(5, 64), "trace.map[5]: 64 is not a processor: there are 64 (16 nodes x 4)"},
           {list(5, 16), "trace.map[5]: processor 16 already runs a thread; set trace.multiplex"}}) {
    const auto r = test::run_cmd(run + "'" + map + "'");
    EXPECT_EQ(r.status, 1) << map << ": " << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << map << ": " << r.output;
  }
}

TEST(TraceReplay, BadInputExitsOneNamingTheFile) {
  // More threads than processors (4 nodes x 2).
  auto r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("splash-mbp16.json") + " --quiet --out /tmp/mbpsim_never" +
                         " --set node.procs=1 --set trace.path=" + MBPSIM_SOURCE_DIR + "/traces/stencil-16t --set network.levels=1");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("trace.path"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("16 threads, the machine 4 processors"), std::string::npos) << r.output;
  // A trace that cannot be replayed is refused before the run.
  const auto bad = make_trace("bad", {"0 begin\n0 release 0x40\n0 end\n"});
  r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("splash-mbp16.json") + " --quiet --out /tmp/mbpsim_never --set trace.path=" + bad);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("thread-0.txt: thread 0, record 1 (release 0x40)"), std::string::npos) << r.output;
  // A stream that breaks in the middle, found during the replay (validation off): exit 1,
  // one line naming the file, thread and record, and no output folder left behind.
  {
    const auto d = test::temp_dir("replay_truncated");
    std::filesystem::copy(std::string(MBPSIM_SOURCE_DIR) + "/traces/stencil-16t", d / "t");
    const auto f = d / "t" / "thread-3.bin.gz";
    std::string bytes = test::read_text(f);
    bytes.resize(bytes.size() / 2);
    test::write_text(f, bytes);
    r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("splash-mbp16.json") + " --quiet --out " + (d / "o").string() +
                      " --set trace.validate=false --set trace.path=" + (d / "t").string());
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("thread-3.bin.gz: thread 3, record "), std::string::npos) << r.output;
    EXPECT_EQ(test::count_lines(r.output), 1) << r.output;
    EXPECT_FALSE(std::filesystem::exists(d / "o"));
  }
  // A gap no capture makes, and no replay could add up, is refused where it is read.
  const auto huge = make_trace("huge_gap", {"0 begin\n18446744073709551615 load 0x40000000 8\n0 end\n"});
  for (const char* validate : {"true", "false"}) {
    r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("splash-mbp16.json") +
                      " --quiet --out /tmp/mbpsim_never --set trace.validate=" + validate + " --set trace.path=" + huge);
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("gap 18446744073709551615 is above the largest a trace may hold"), std::string::npos) << r.output;
  }
  r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("splash-mbp16.json") + " --quiet --out /tmp/mbpsim_never --set trace.path=/nonexistent");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/trace.meta"), std::string::npos) << r.output;
}

// With validation off, a trace that breaks a synchronisation rule is bad input found during
// the replay: one line naming the file, thread and record, exit 1, never an abort (it used to
// be an internal error, status 134).
TEST(TraceReplay, AnUnvalidatedTraceThatBreaksARuleExitsOne) {
  struct Case {
    std::string name;
    std::vector<std::string> threads;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {"release_not_held", {"0 begin\n0 release 0x40001000\n0 end\n"}, "thread 0, record 1 (release): release of a lock the thread does not hold"},
           {"created_twice", {"0 begin\n0 create 1\n0 create 1\n0 join 1\n0 end\n", "0 begin\n0 end\n"}, "thread 0, record 2 (create): thread 1 was already created"},
           {"release_other", {"0 begin\n0 acquire 0x40001000 0\n0 release 0x40001040\n0 release 0x40001000\n0 end\n"}, "thread 0, record 2 (release): release of a lock the thread does not hold"}}) {
    const auto tr = make_trace("unvalidated_" + c.name, c.threads);
    const auto d = test::temp_dir("unvalidated_out_" + c.name);
    auto r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("splash-mbp16.json") + " --quiet --out " + (d / "o").string() +
                           " --set trace.validate=false --set trace.path=" + tr);
    EXPECT_EQ(r.status, 1) << c.name << ": " << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.name << ": " << r.output;
    EXPECT_NE(r.output.find("trace.validate is false"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
    EXPECT_EQ(test::count_lines(r.output), 1) << r.output;
    EXPECT_FALSE(std::filesystem::exists(d / "o"));
  }
}

}  // namespace
}  // namespace mbpsim
