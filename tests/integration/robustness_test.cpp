// The edges where a researcher loses results (issue 40): a results folder that is one run's
// whole, never two runs' mixture; runs stopped by a limit or a signal that say so; inputs that
// are not config files; numbers out of range.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <thread>

#include "models/core/footprint.h"
#include "tests/test_util.h"


namespace mbpsim {
namespace {

namespace fs = std::filesystem;
using test::run_cmd;

using test::count_lines;

// What a folder holds, by name, sorted.
std::vector<std::string> entries(const fs::path& d) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(d)) v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}

const std::string kQuick = " --quiet --set workload.measure_cycles=2000 --set workload.warmup_cycles=0";

std::string run_into(const fs::path& out, const std::string& extra = "") {
  return test::mbpsim_bin() + " run " + test::config_path("default.json") + kQuick + " --out " + out.string() + extra;
}

// A second run into a folder replaces it whole: a file the first left (here a failure.json
// from a failed run) does not survive beside the new results. Nothing but the folder is left
// beside it: no lock, no staging folder.
TEST(Robustness, AResultsFolderIsReplacedWholeNeverMerged) {
  auto d = test::temp_dir("rob_replace");
  auto r = run_cmd(run_into(d / "o"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(entries(d / "o"), (std::vector<std::string>{"config.resolved.json", "host.json", "stats.json"}));
  test::write_text(d / "o" / "failure.json", "{\"from\": \"an older run\"}\n");
  test::write_text(d / "o" / "stats.json", "truncated");
  r = run_cmd(run_into(d / "o", " --seed 5"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(entries(d / "o"), (std::vector<std::string>{"config.resolved.json", "host.json", "stats.json"}));
  EXPECT_EQ(nlohmann::json::parse(test::read_text(d / "o" / "stats.json"))["run"]["seed"], 5);
  EXPECT_EQ(entries(d), std::vector<std::string>{"o"}) << "no lock file or staging folder left beside the results";
}

// A folder holding anything a run does not write is never replaced (nor emptied); --keep
// refuses to replace even a run's folder; a file in --out's place is refused too. Each says
// so in one line, and leaves everything as it was.
TEST(Robustness, AFolderThatIsNotARunsIsRefused) {
  auto d = test::temp_dir("rob_refuse");
  auto r = run_cmd(run_into(d / "o"));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string before = test::read_text(d / "o" / "stats.json");
  test::write_text(d / "o" / "notes.txt", "my own notes");
  r = run_cmd(run_into(d / "o", " --seed 9"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find("holds 'notes.txt', which no mbpsim run writes"), std::string::npos) << r.output;
  EXPECT_EQ(test::read_text(d / "o" / "notes.txt"), "my own notes");
  EXPECT_EQ(test::read_text(d / "o" / "stats.json"), before);

  fs::remove(d / "o" / "notes.txt");
  r = run_cmd(run_into(d / "o", " --seed 9 --keep"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("exists, and --keep refuses to replace it"), std::string::npos) << r.output;
  EXPECT_EQ(test::read_text(d / "o" / "stats.json"), before);
  r = run_cmd(run_into(d / "fresh", " --keep"));
  EXPECT_EQ(r.status, 0) << "--keep writes a folder that does not exist yet: " << r.output;

  test::write_text(d / "afile", "x");
  r = run_cmd(run_into(d / "afile"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("exists and is not a folder"), std::string::npos) << r.output;
  EXPECT_EQ(test::read_text(d / "afile"), "x");
}

// While one run holds a results folder (its lock), a second run into it is refused at once
// and writes nothing; once the first lets go, the second runs.
TEST(Robustness, ASecondRunIntoTheSameFolderIsRefused) {
  auto d = test::temp_dir("rob_lock");
  const int fd = ::open((d / "o.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  auto r = run_cmd(run_into(d / "o"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("another mbpsim run is writing its results there"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d / "o"));
  ::close(fd);
  r = run_cmd(run_into(d / "o"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::exists(d / "o" / "stats.json"));
}

// Two real runs started together into one folder: each either writes the whole folder or is
// refused, so the folder always holds one run's files, never a mixture.
TEST(Robustness, TwoRunsStartedTogetherNeverMixTheirFiles) {
  auto d = test::temp_dir("rob_race");
  for (int trial = 0; trial < 5; ++trial) {
    const std::string a = run_into(d / "o", " --seed " + std::to_string(100 + trial));
    const std::string b = run_into(d / "o", " --seed " + std::to_string(200 + trial));
    auto r = run_cmd("(" + a + " > " + (d / "a.log").string() + " 2>&1 & " + b + " > " + (d / "b.log").string() +
                     " 2>&1; wait)");
    const std::string la = test::read_text(d / "a.log"), lb = test::read_text(d / "b.log");
    auto st = nlohmann::json::parse(test::read_text(d / "o" / "stats.json"));
    auto rc = nlohmann::json::parse(test::read_text(d / "o" / "config.resolved.json"));
    EXPECT_EQ(st["run"]["seed"], rc["experiment"]["seed"]) << la << lb;
    for (const std::string* l : {&la, &lb})
      EXPECT_TRUE(l->find("results in") != std::string::npos || l->find("another mbpsim run") != std::string::npos) << *l;
  }
}

// A run that ends at its limit before its workload is done says which limit on stderr,
// exits 3, and still writes its results, marked.
TEST(Robustness, ARunStoppedByItsLimitExitsThreeAndNamesIt) {
  struct Case {
    std::string config, args, limit;
  };
  for (const Case& c : std::vector<Case>{
           {"mbp16.json", "--set workload.max_cycles=2000", "workload.max_cycles"},
           {"mbcf-ss20-100tx.json", "--set workload.max_cycles=2000", "workload.max_cycles"},
           {"splash-mbp16.json", "--set workload.max_cycles=1000", "workload.max_cycles"},  // a trace replay
           {"net-qtree64-booksim.json", "--set workload.injection_rate=0.1", "workload.drain_cycles"}}) {
    auto r = test::run_config(c.config, c.args);
    EXPECT_EQ(r.status, 3) << r.command << "\n" << r.output;
    EXPECT_NE(r.output.find("the run reached its limit, " + c.limit), std::string::npos) << r.output;
    ASSERT_FALSE(r.stats.is_null()) << r.command;
    EXPECT_EQ(r.stats["run"]["stopped_by"], c.limit);
    if (r.summary().contains("finished")) {
      EXPECT_FALSE(r.summary()["finished"].get<bool>());
    }
  }
  auto r = test::run_config("mbp16.json", "--set workload.max_cycles=20000000");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(r.stats["run"].contains("stopped_by"));
}

// `mbpsim ARGS...` in a child whose stdout and stderr come back through `*fd`; `block_sigint`:
// it starts with SIGINT blocked and pending (delivered once mbpsim unblocks it).
pid_t spawn_mbpsim(const std::vector<std::string>& args, int* fd, bool block_sigint = false) {
  int out[2];
  if (::pipe(out) != 0) return -1;
  std::vector<char*> argv{const_cast<char*>("mbpsim")};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::close(out[0]);
    if (block_sigint) {
      sigset_t s;
      sigemptyset(&s);
      sigaddset(&s, SIGINT);
      ::sigprocmask(SIG_BLOCK, &s, nullptr);
      ::raise(SIGINT);  // pending across exec
    }
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    ::execv(MBPSIM_BINARY, argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  *fd = out[0];
  return pid;
}

// A run of the network that would take hours, into `out`, once it prints its first heartbeat
// (it is simulating: its results folder is claimed and its staging folder made); what it
// printed so far is in `*text`, and the rest comes through `*fd`.
pid_t spawn_long_run(const fs::path& out, int* fd, std::string* text) {
  const pid_t pid = spawn_mbpsim({"run", test::config_path("net-qtree64-uniform.json"), "--out", out.string(), "--set",
                                  "workload.measure_cycles=1000000000", "--set", "experiment.heartbeat_s=0.01"},
                                 fd);
  if (pid <= 0) return pid;
  char buf[512];
  while (text->find("[mbpsim] ") == std::string::npos) {
    const ssize_t n = ::read(*fd, buf, sizeof buf);
    if (n <= 0) break;
    text->append(buf, static_cast<size_t>(n));
  }
  return pid;
}

// SIGINT and SIGTERM stop a run at the next slice: it writes what it has, marked interrupted
// with the simulated time reached, says so in one line and exits 130 or 143.
class Interrupt : public ::testing::TestWithParam<int> {};

TEST_P(Interrupt, WritesTheStatisticsSoFarMarkedInterrupted) {
  const int sig = GetParam();
  auto d = test::temp_dir(std::string("rob_sig") + std::to_string(sig));
  int out[1];
  std::string text;
  const pid_t pid = spawn_long_run(d / "o", out, &text);
  ASSERT_GT(pid, 0);
  ASSERT_NE(text.find("[mbpsim] "), std::string::npos) << text;
  ::kill(pid, sig);
  char buf[512];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st)) << text;
  EXPECT_EQ(WEXITSTATUS(st), 128 + sig) << text;
  EXPECT_NE(text.find(std::string("mbpsim: interrupted by ") + (sig == SIGINT ? "SIGINT" : "SIGTERM")), std::string::npos) << text;
  auto stats = nlohmann::json::parse(test::read_text(d / "o" / "stats.json"));
  EXPECT_TRUE(stats["run"]["interrupted"].get<bool>());
  EXPECT_GT(stats["run"]["simulated_cycles"].get<uint64_t>(), 0u);
  EXPECT_LT(stats["run"]["simulated_cycles"].get<uint64_t>(), 1000000000u);
  EXPECT_TRUE(fs::exists(d / "o" / "config.resolved.json"));
  EXPECT_EQ(entries(d), std::vector<std::string>{"o"});
}

INSTANTIATE_TEST_SUITE_P(Robustness, Interrupt, ::testing::Values(SIGINT, SIGTERM));

// A run killed outright (SIGKILL: no handler runs) leaves its staging folder and its lock file
// beside DIR, and DIR as it was. The next run into DIR, holding the lock, removes them (and the
// place a commit moves the previous results aside to, which a crash between its two renames
// leaves: beside DIR it goes, without DIR it is put back) without reading the rest of the
// parent folder, and leaves DIR alone.
TEST(Robustness, TheNextRunRemovesWhatAKilledRunLeft) {
  auto d = test::temp_dir("rob_killed");
  auto r = run_cmd(run_into(d / "o"));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string before = test::read_text(d / "o" / "stats.json");
  int out[1];
  std::string text;
  const pid_t pid = spawn_long_run(d / "o", out, &text);
  ASSERT_GT(pid, 0);
  ASSERT_NE(text.find("[mbpsim] "), std::string::npos) << text;
  ::kill(pid, SIGKILL);
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ::close(out[0]);
  ASSERT_TRUE(WIFSIGNALED(st)) << text;
  EXPECT_EQ(entries(d), (std::vector<std::string>{".o.partial", "o", "o.lock"})) << text;
  EXPECT_EQ(test::read_text(d / "o" / "stats.json"), before);
  fs::create_directory(d / ".o.old");
  test::write_text(d / ".o.old" / "stats.json", "from a commit that crashed");
  r = run_cmd(run_into(d / "o", " --seed 7"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(entries(d), std::vector<std::string>{"o"});
  EXPECT_EQ(nlohmann::json::parse(test::read_text(d / "o" / "stats.json"))["run"]["seed"], 7);
  // A commit stopped between its two renames: DIR gone, the previous results aside. They go
  // back into DIR, which is then what --keep refuses to replace.
  const std::string seven = test::read_text(d / "o" / "stats.json");
  fs::rename(d / "o", d / ".o.old");
  r = run_cmd(run_into(d / "o", " --seed 8 --keep"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("exists, and --keep refuses to replace it"), std::string::npos) << r.output;
  EXPECT_EQ(entries(d), std::vector<std::string>{"o"});
  EXPECT_EQ(test::read_text(d / "o" / "stats.json"), seven);
}

// A signal that comes while the system is being built is kept until the run's first step: the
// run stops there, at cycle 0, with its statistics marked interrupted (it used to die at once,
// leaving its staging folder and lock). Made deterministic by starting mbpsim with SIGINT
// blocked and pending: the runner unblocks it as it claims the results folder.
TEST(Robustness, ASignalWhileBuildingStopsTheRunAtItsFirstStep) {
  auto d = test::temp_dir("rob_sigbuild");
  int out[1];
  const pid_t pid = spawn_mbpsim({"run", test::config_path("mbp16.json"), "--quiet", "--out", (d / "o").string()}, out, true);
  ASSERT_GT(pid, 0);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st)) << text;
  EXPECT_EQ(WEXITSTATUS(st), 130) << text;
  EXPECT_NE(text.find("mbpsim: interrupted by SIGINT"), std::string::npos) << text;
  auto stats = nlohmann::json::parse(test::read_text(d / "o" / "stats.json"));
  EXPECT_TRUE(stats["run"]["interrupted"].get<bool>());
  EXPECT_EQ(stats["run"]["simulated_cycles"].get<uint64_t>(), 0u);
  EXPECT_EQ(entries(d), std::vector<std::string>{"o"});
}

// The runner sizes its sc_start steps by the wall clock (so that the heartbeat and signals
// come on time however slow a cycle is), but asks whether the workload is done only at fixed
// cycles: one-cycle steps give byte-identical results.
TEST(Robustness, TheWallClockNeverChangesTheResults) {
  for (const auto& [config, args] : std::vector<std::pair<std::string, std::string>>{
           {"default.json", "--set workload.measure_cycles=2000"},
           {"fig2-7-multicast.json", ""},
           {"mbp16.json", "--set sharing.refs_per_proc=300"},
           {"splash-mbp16.json", ""},
           {"mbcf-ss20-100tx.json", "--set workload.kind=rtt --set 'workload.sizes=[64]' --set workload.iterations=20"},
           {"mbp2p-ss20.json", "--set workload.kind=rtt --set 'workload.sizes=[64]' --set workload.iterations=20"}}) {
    const auto normal = test::run_config(config, args);
    const auto stepped = test::run_config(config, args + " --set experiment.heartbeat_s=1e-9");
    ASSERT_EQ(normal.status, 0) << normal.command << "\n" << normal.output;
    ASSERT_EQ(stepped.status, 0) << stepped.command << "\n" << stepped.output;
    EXPECT_EQ(test::read_text(normal.out / "stats.json"), test::read_text(stepped.out / "stats.json")) << config;
  }
}

// The heartbeat comes at its period even where one 10,000-cycle slice takes long (a
// 4,096-node network under load): the largest gap between two heartbeats stays small. (It was
// the whole slice: 20 s and then 100 s at 65,536 nodes.)
TEST(Robustness, TheHeartbeatComesAtItsPeriodWhateverACycleCosts) {
#ifdef MBPSIM_TEST_ASAN
  GTEST_SKIP() << "too slow under AddressSanitizer to mean anything";
#endif
  auto d = test::temp_dir("rob_heartbeat");
  auto r = run_cmd(test::mbpsim_bin() + " run " + test::config_path("net-qtree64-uniform.json") + " --out " + (d / "o").string() +
                   " --set network.levels=6 --set workload.injection_rate=0.05 --set workload.warmup_cycles=0"
                   " --set workload.measure_cycles=20000 --set workload.drain_cycles=2000 --set experiment.heartbeat_s=0.1");
  // (Saturated on purpose, status 3: a heavy, steady load. A 10,000-cycle slice takes about
  // 0.9 s on this machine class, which would be the gap between heartbeats if the runner sized
  // its steps by cycles; the run, about 2 s, gives some twenty heartbeats. Until 2026-12-08 it
  // was a 1,024-node tree for 10,000 cycles: once the network got faster that run took 0.3 s, a
  // slice less than the gap allowed, and on a loaded host it sometimes printed two heartbeats.)
  ASSERT_TRUE(r.status == 0 || r.status == 3) << r.output;
  std::vector<double> walls;
  std::istringstream is(r.output);
  for (std::string l; std::getline(is, l);) {
    const auto at = l.find("| wall ");
    if (l.rfind("[mbpsim] ", 0) == 0 && at != std::string::npos) walls.push_back(std::stod(l.substr(at + 7)));
  }
  ASSERT_GE(walls.size(), 3u) << r.output;
  double gap = 0;
  for (size_t i = 1; i < walls.size(); ++i) gap = std::max(gap, walls[i] - walls[i - 1]);
  EXPECT_LT(gap, 0.5) << r.output;
}

// A simulated failure (exit 2) leaves a folder marked failed, with the message and the seed,
// never an empty one; SystemC's own report of the stop does not reach stdout.
TEST(Robustness, AFailedRunLeavesAFolderMarkedFailed) {
  auto d = test::temp_dir("rob_failed");
  test::write_text(d / "c.json", R"({"network": {"levels": 2, "watchdog_cycles": 200},
    "workload": {"kind": "script", "measure_cycles": 10, "drain_cycles": 5000,
                 "script": [{"src": 4, "dests": [5, 9], "silent": [9]}]}})");
  auto r = run_cmd("(" + test::mbpsim_bin() + " run " + (d / "c.json").string() + " --seed 7 --out " + (d / "o").string() +
                   " 2>/dev/null)");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output.find("Info"), std::string::npos) << "stdout: " << r.output;
  EXPECT_EQ(r.output.find("stopped by user"), std::string::npos) << "stdout: " << r.output;
  auto f = nlohmann::json::parse(test::read_text(d / "o" / "failure.json"));
  EXPECT_EQ(f["status"], 2);
  EXPECT_EQ(f["seed"], 7);
  EXPECT_NE(f["failure"].get<std::string>().find("network watchdog"), std::string::npos);
  EXPECT_NE(f["in_flight"].get<std::string>().find("multicast txn 1 from node 4"), std::string::npos);
  auto st = nlohmann::json::parse(test::read_text(d / "o" / "stats.json"));
  EXPECT_EQ(st["run"]["failure"], f["failure"]);
}

// A config that needs more memory than the host gives ends in one line naming the phase (it
// was SystemC's "E549 uncaught exception std::bad_alloc" dump), and leaves no folder.
TEST(Robustness, RunningOutOfMemoryIsOneLineNamingThePhase) {
#ifdef MBPSIM_TEST_ASAN
  GTEST_SKIP() << "a memory limit cannot be set under AddressSanitizer";
#endif
  auto d = test::temp_dir("rob_oom");
  auto r = run_cmd("(ulimit -v 3000000; " + test::mbpsim_bin() + " run " + test::config_path("mbp16.json") +
                   " --quiet --set node.l2_bytes=67108864 --out " + (d / "o").string() + ")");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find("mbpsim: out of memory while building the system"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::is_empty(d));
}

// A run the host cannot hold is refused before it builds anything, in one line naming what
// makes it large (it used to grow for gigabytes and end in SystemC's bad_alloc dump);
// validate and stats-doc foresee it the same way. 65,536 nodes of four 1 MiB L2s each.
TEST(Robustness, ARunTooLargeForTheHostIsRefusedBeforeItBuilds) {
  auto d = test::temp_dir("rob_toolarge");
  const std::string big = test::config_path("mbp64.json") + " --set network.levels=8";
  for (const std::string& cmd : {"run " + big + " --quiet --out " + (d / "o").string(), "validate " + big, "stats-doc " + big}) {
    SCOPED_TRACE(cmd);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = run_cmd(test::mbpsim_bin() + " " + cmd);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_EQ(count_lines(r.output), 1) << r.output;
    EXPECT_NE(r.output.find("mbp64.json: predicted memory "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("GiB (experiment.max_memory_gb, by default 80% of this host's memory): L2 caches "), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("(node.l2_bytes x node.procs x nodes)"), std::string::npos) << r.output;
    EXPECT_LT(s, 10.0) << "refused only after building";
  }
  EXPECT_TRUE(fs::is_empty(d));
}

// experiment.max_memory_gb is the limit when given; validate prints the prediction, item by
// item, with the parameters each grows with.
TEST(Robustness, ExperimentMaxMemoryGbIsTheLimitAndValidatePrintsThePrediction) {
  auto r = test::run_config("mbp16.json", "--set experiment.max_memory_gb=0.01");
  EXPECT_EQ(r.status, 1) << r.output;
  // The largest items, named with what they grow with (the program's own share comes first
  // under the sanitizers, whose shadow memory it holds).
  EXPECT_NE(r.output.find("exceeds the limit of 10.2 MiB (experiment.max_memory_gb): "), std::string::npos) << r.output;
  // The L2 caches' pages: a snoop looks up only the L2s the snoop filter names, so each cache
  // holds pages for its own processor's blocks (models/mbp/system.cpp, System::footprint).
  // mbp.check_invariants checks the filter against every L2 of the node at each snoop: on a
  // host whose kernel maps no shared zero page that lookup makes a page resident, and each
  // cache then holds pages for the blocks of every busy processor of its node. Hosts of this
  // project's machine class have been seen both ways.
  EXPECT_NE(r.output.find("L2 caches 40.0 MiB (node.l2_bytes x node.procs x nodes)"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(r.out));
  auto checked = test::run_config("mbp16.json", "--set experiment.max_memory_gb=0.01 --set mbp.check_invariants=true");
  EXPECT_EQ(checked.status, 1) << checked.output;
  const std::string l2 = mbpsim::reads_make_pages_resident() ? "L2 caches 64.0 MiB" : "L2 caches 40.0 MiB";
  EXPECT_NE(checked.output.find(l2 + " (node.l2_bytes x node.procs x nodes)"), std::string::npos) << l2 << "\n" << checked.output;
  auto v = run_cmd(test::mbpsim_bin() + " validate " + test::config_path("mbp16.json"));
  EXPECT_EQ(v.status, 0) << v.output;
  for (const char* line : {"configs/mbp16.json: ok\n  predicted memory ", "\n    L2 caches ", "   node.l2_bytes x node.procs x nodes\n",
                           "\n    routers ", "\n    program and libraries "})
    EXPECT_NE(v.output.find(line), std::string::npos) << line << "\n" << v.output;
}

// The prediction against what runs really hold (peak RSS, host.json): within a quarter, for a
// synthetic run, a saturated one (its source queues grow), a cluster of MBP2 cards, the MBP
// machine under a sharing pattern and a trace replay. docs/PERFORMANCE.md has the full table
// (scripts/memory-table.sh).
TEST(Robustness, ThePredictedMemoryIsWithinAQuarterOfThePeak) {
#ifdef MBPSIM_TEST_ASAN
  GTEST_SKIP() << "AddressSanitizer's shadow memory is not the simulator's";
#endif
  const std::pair<const char*, const char*> cases[] = {
      {"default.json", ""},
      {"net-qtree64-uniform.json", "--set network.levels=5"},
      {"mbcf-tester-mbp2.json", "--set mbcf.nodes=16"},
      {"mbp16.json", "--set sharing.refs_per_proc=5000"},
      {"splash-mbp16.json", ""},
  };
  for (const auto& [config, args] : cases) {
    SCOPED_TRACE(std::string(config) + " " + args);
    auto r = test::run_config(config, args);
    ASSERT_TRUE(r.status == 0 || r.status == 3) << r.output;
    const auto host = r.host();
    const double peak = host["peak_memory_bytes"].get<double>(), predicted = host["predicted_memory_bytes"].get<double>();
    EXPECT_NEAR(predicted / peak, 1.0, 0.25) << "predicted " << predicted / 1048576 << " MiB, peak " << peak / 1048576 << " MiB";
  }
}

// Every number at each end of its declared range is either accepted and built, or refused in
// one line: never a crash, and, in the sanitizer suite (UBSan with float-cast-overflow), never
// a conversion the model cannot represent (a time in picoseconds from a duration at its
// maximum, a count from a rate). Each parameter is tried in a config whose system reads it.
struct RangeGroup {
  const char* name;
  std::vector<std::string> prefixes;
  const char* config;
  const char* args = "";  // a smaller machine where the parameters allow it
};
void PrintTo(const RangeGroup& g, std::ostream* os) { *os << g.name << " (" << g.config << ")"; }
class RangeEnds : public ::testing::TestWithParam<RangeGroup> {};

TEST_P(RangeEnds, EveryNumberAtItsBoundsBuildsOrIsRefusedInOneLine) {
  const RangeGroup& g = GetParam();
  int tried = 0;
  for (const ParamSpec& p : schema().all()) {
    if (p.type != mbpsim::ParamType::Int && p.type != mbpsim::ParamType::Double) continue;
    const std::string prefix = p.key.substr(0, p.key.find('.'));
    if (std::find(g.prefixes.begin(), g.prefixes.end(), prefix) == g.prefixes.end()) continue;
    for (double v : {p.min, p.max}) {
      if (!std::isfinite(v)) continue;
      char text[64];
      std::snprintf(text, sizeof text, p.type == mbpsim::ParamType::Int ? "%.0f" : "%.17g", v);
      const std::string cmd = test::mbpsim_bin() + " validate " + test::config_path(g.config) + " " + g.args + " --set " + p.key + "=" + text;
      auto r = run_cmd("timeout 60 env " + cmd);
      ++tried;
      EXPECT_TRUE(r.status == 0 || r.status == 1) << cmd << " -> " << r.status << "\n" << r.output;
      if (r.status == 1) {
        EXPECT_EQ(count_lines(r.output), 1) << cmd << "\n" << r.output;
      }
      EXPECT_EQ(r.output.find("runtime error"), std::string::npos) << cmd << "\n" << r.output;
    }
  }
  EXPECT_GT(tried, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Robustness, RangeEnds,
    ::testing::Values(RangeGroup{"network", {"experiment", "network", "workload"}, "default.json"},
                      RangeGroup{"machine", {"node", "mbp", "sharing"}, "mbp16.json", "--set network.levels=1"},
                      RangeGroup{"testers", {"tester"}, "mbp16-random-tester.json"},
                      RangeGroup{"litmus", {"litmus"}, "litmus-mbp16.json"},
                      RangeGroup{"trace", {"trace"}, "splash-mbp16.json"},
                      RangeGroup{"cluster", {"mbcf", "host", "nic", "bus", "ether", "mbcf_tester"}, "mbcf-tester-ether.json"},
                      RangeGroup{"protection", {"protection"}, "protection-ether.json"},
                      RangeGroup{"mbp2", {"mbp2", "pme", "em", "cau", "meac"}, "mbcf-tester-mbp2.json"},
                      RangeGroup{"crypto", {"crypto"}, "mbp2c-secure.json"}),
    [](const auto& i) { return std::string(i.param.name); });

// Bad input found while building leaves the previous results as they were.
TEST(Robustness, BadInputLeavesThePreviousResults) {
  auto d = test::temp_dir("rob_badin");
  auto r = run_cmd(run_into(d / "o"));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string before = test::read_text(d / "o" / "stats.json");
  r = run_cmd(run_into(d / "o", " --set workload.multicast_fanout=100 --set workload.pattern=multicast"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(test::read_text(d / "o" / "stats.json"), before);
  EXPECT_EQ(entries(d), std::vector<std::string>{"o"});
}

// A rate so small that no packet comes in the run offers nothing (it used to offer the
// maximum: a gap beyond 2^64 cast to an integer).
TEST(Robustness, ATinyRateOffersNothing) {
  for (const char* rate : {"1e-30", "1e-300"}) {
    auto r = test::run_config("net-qtree64-uniform.json", std::string("--set workload.injection_rate=") + rate);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.summary()["offered_rate"], 0.0) << rate;
    EXPECT_EQ(r.summary()["packets_delivered"], 0) << rate;
  }
}

// An overloaded source queue is bounded (workload.source_queue): packets due while it is full
// are refused and counted, the run is saturated, and memory stays small (it grew to 4 GB).
TEST(Robustness, AnOverloadedSourceRefusesPacketsInsteadOfGrowing) {
  auto r = test::run_config("net-qtree64-uniform.json", "--set workload.injection_rate=1 --set workload.measure_cycles=200000 "
                                                        "--set workload.drain_cycles=100 --set workload.source_queue=64");
  EXPECT_EQ(r.status, 3) << r.output;
  ASSERT_FALSE(r.stats.is_null()) << r.output;
  EXPECT_TRUE(r.summary()["saturated"].get<bool>());
  EXPECT_GT(r.summary()["packets_refused"].get<uint64_t>(), 64u * 100000u) << "most packets due are refused";
  EXPECT_NEAR(r.summary()["offered_rate"].get<double>(), 1.0, 0.01) << "refused packets are still offered";
  const auto host = r.host();
  EXPECT_LT(host["peak_memory_bytes"].get<double>(), 200e6);
  auto ok = test::run_config("net-qtree64-uniform.json", "");
  ASSERT_EQ(ok.status, 0) << ok.output;
  EXPECT_EQ(ok.summary()["packets_refused"], 0);
}

// A config must be a regular file of bounded size holding JSON whose objects never repeat a
// key: a folder, a device or a duplicate says so in one line (/dev/urandom used to hang).
TEST(Robustness, AConfigIsARegularFileWithoutRepeatedKeys) {
  auto d = test::temp_dir("rob_cfg");
  test::write_text(d / "dup.json", R"({"network": {"radix": 4, "levels": 2, "radix": 4}})");
  test::write_text(d / "dup2.json", R"({"workload": {"kind": "script", "script": [{"src": 1, "dests": [2]}, {"src": 1, "src": 2, "dests": [3]}]}})");
  test::write_text(d / "big.json", "{" + std::string(Config::kMaxConfigBytes, ' ') + "}");
  struct Case {
    std::string path, says;
  };
  for (const Case& c : std::vector<Case>{{d.string(), ": is a folder, not a config file"},
                                         {"/dev/zero", ": not a regular file"},
                                         {"/dev/urandom", ": not a regular file"},
                                         {(d / "dup.json").string(), "dup.json: network.radix: named twice"},
                                         {(d / "dup2.json").string(), "dup2.json: workload.script[1].src: named twice"},
                                         {(d / "big.json").string(), "more than a config may hold"}}) {
    for (const std::string& cmd : {" run " + c.path + " --quiet --out " + (d / "o").string(), " validate " + c.path}) {
      auto r = run_cmd("timeout 20 env " + test::mbpsim_bin() + cmd);
      EXPECT_EQ(r.status, 1) << cmd << ": " << r.output;
      EXPECT_EQ(count_lines(r.output), 1) << r.output;
      EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
    }
  }
  EXPECT_FALSE(fs::exists(d / "o"));
}

// Numbers out of range are named with their exact bounds; the options only run takes are
// refused by validate; bytes of a bad input reach the terminal escaped.
TEST(Robustness, ExactRangesRunOnlyOptionsAndEscapedBytes) {
  const std::string cfg = test::config_path("default.json");
  auto r = run_cmd(test::mbpsim_bin() + " run " + cfg + " --seed 18446744073709551615 --out /tmp/mbpsim_never_written_seed");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("value 18446744073709551615 out of range [0, 9000000000000000000]"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists("/tmp/mbpsim_never_written_seed"));
  for (const char* opt : {"--out x", "--keep", "--quiet"}) {
    r = run_cmd(test::mbpsim_bin() + " validate " + cfg + " " + opt);
    EXPECT_EQ(r.status, 1) << opt << ": " << r.output;
    EXPECT_NE(r.output.find(" is for run"), std::string::npos) << r.output;
  }
  auto d = test::temp_dir("rob_bytes");
  // (JSON escapes, so the parser accepts the key and the message quotes the raw bytes.)
  test::write_text(d / "c.json", "{\"net\\u0007work\\u001b[31m\": {}}");
  r = run_cmd(test::mbpsim_bin() + " validate " + (d / "c.json").string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output.find('\x07'), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("net\\x07work\\x1b[31m: unknown parameter"), std::string::npos) << r.output;
  test::write_text(d / "c.json", "{\"network\": {\"levels\": 2}, \"\xff\xfe\": 1}");
  r = run_cmd(test::mbpsim_bin() + " validate " + (d / "c.json").string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output.find('\xff'), std::string::npos) << r.output;
}

}  // namespace
}  // namespace mbpsim
