// The trace-capture tool on the project's own PARMACS kernel: its reference counts equal an
// independent count (valgrind's lackey on the uninstrumented build), the trace validates and
// replays, and shared addresses repeat from run to run.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "tests/test_util.h"
#include "workloads/trace/trace.h"

namespace mbpsim {
namespace {

namespace fs = std::filesystem;

std::string capture(const std::string& name, const std::string& args) {
  const auto d = test::temp_dir("capture_" + name) / "trace";
  auto r = test::run_cmd("MBPTRACE_OUT=" + d.string() + " " + STENCIL_TRACED + " " + args);
  EXPECT_EQ(r.status, 0) << r.output;
  return d.string();
}

struct Counts {
  uint64_t loads = 0, stores = 0;
};

// References of the trace inside [lo, hi).
Counts trace_counts(const std::string& dir, uint64_t lo, uint64_t hi) {
  const trace::Meta m = trace::read_meta(dir);
  Counts c;
  for (uint32_t t = 0; t < m.threads; ++t) {
    auto in = trace::open_stream(dir, m, t);
    trace::Record r;
    while (in->next(r)) {
      if (!trace::is_memory(r.kind) || r.addr < lo || r.addr >= hi) continue;
      if (r.kind != trace::Kind::Store) ++c.loads;
      if (r.kind != trace::Kind::Load) ++c.stores;
    }
  }
  return c;
}

TEST(Capture, ReferenceCountsEqualValgrindLackey) {
  if (test::run_cmd("valgrind --version").status != 0) GTEST_SKIP() << "valgrind is not installed (scripts/setup.sh installs it)";
  const std::string args = "4 2048 2";
  const std::string dir = capture("lackey", args);
  const trace::Meta m = trace::read_meta(dir);
  ASSERT_EQ(m.threads, 4u);
  ASSERT_EQ(m.allocations.size(), 3u);  // the globals, then the arrays A and B
  const uint64_t lo = m.allocations[1].addr, hi = m.allocations[2].addr + m.allocations[2].size;
  const Counts got = trace_counts(dir, lo, hi);
  // Independent count: every data access of the uninstrumented build, by valgrind.
  const auto d = test::temp_dir("capture_lackey_run");
  const std::string log = (d / "lackey.log").string();
  auto r = test::run_cmd("MBPTRACE_OUT=" + (d / "t").string() + " valgrind --tool=lackey --trace-mem=yes --log-file=" + log + " " +
                         STENCIL_PLAIN + " " + args);
  ASSERT_EQ(r.status, 0) << r.output;
  Counts want;
  std::ifstream f(log);
  const std::regex line("^ ([LSM]) ([0-9a-f]+),([0-9]+)");
  std::smatch mm;
  for (std::string l; std::getline(f, l);) {
    if (l.size() < 4 || l[0] != ' ' || !std::regex_search(l, mm, line)) continue;
    const uint64_t a = std::stoull(mm[2].str(), nullptr, 16);
    if (a < lo || a >= hi) continue;
    const char k = mm[1].str()[0];
    if (k != 'S') ++want.loads;
    if (k != 'L') ++want.stores;
  }
  std::printf("trace: %llu loads, %llu stores; lackey: %llu loads, %llu stores\n", static_cast<unsigned long long>(got.loads),
              static_cast<unsigned long long>(got.stores), static_cast<unsigned long long>(want.loads),
              static_cast<unsigned long long>(want.stores));
  EXPECT_GT(want.loads, 10000u);
  EXPECT_EQ(got.loads, want.loads);
  EXPECT_EQ(got.stores, want.stores);
}

TEST(Capture, TheTraceValidatesAndReplays) {
  const std::string dir = capture("replay", "4 1024 2");
  const auto v = trace::validate(dir);
  EXPECT_GT(v.records, 5000u);
  const trace::Summary s = trace::summarize(dir);
  EXPECT_EQ(s.by_kind[static_cast<int>(trace::Kind::Create)], 3u);
  EXPECT_EQ(s.by_kind[static_cast<int>(trace::Kind::Join)], 3u);
  EXPECT_EQ(s.by_kind[static_cast<int>(trace::Kind::Barrier)], 4u * 4);  // start, 2 steps, end
  EXPECT_EQ(s.by_kind[static_cast<int>(trace::Kind::RoiBegin)], 4u);
  EXPECT_GE(s.by_kind[static_cast<int>(trace::Kind::Acquire)], 4u + 4 + 64);  // id, sum, GETSUB
  const auto out = test::temp_dir("capture_replay_run");
  auto r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("splash-mbp16.json") + " --quiet --set trace.path=" + dir +
                         " --set network.levels=1 --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto st = nlohmann::json::parse(test::read_text(out / "stats.json"))["summary"];
  EXPECT_TRUE(st["finished"].get<bool>());
  EXPECT_EQ(st["references"].get<uint64_t>(), s.by_kind[1] + s.by_kind[2] + s.by_kind[3]);
}

TEST(Capture, SharedAddressesRepeatFromRunToRun) {
  const trace::Meta a = trace::read_meta(capture("repeat_a", "2 512 1"));
  const trace::Meta b = trace::read_meta(capture("repeat_b", "2 512 1"));
  ASSERT_EQ(a.allocations.size(), b.allocations.size());
  for (size_t i = 0; i < a.allocations.size(); ++i) {
    EXPECT_EQ(a.allocations[i].addr, b.allocations[i].addr);
    EXPECT_EQ(a.allocations[i].size, b.allocations[i].size);
  }
  EXPECT_EQ(a.allocations[0].addr, 0x100000000000u);
  EXPECT_EQ(a.program, "stencil_traced");
  EXPECT_EQ(a.args, "2 512 1");
}

// The second kernel: a producer hands a buffer over with SETPAUSE/WAITPAUSE each round, and
// every thread updates histogram buckets under an array of locks. The pause hand-offs become
// broadcast/cwait records, the lock array 16 lock objects, and the replay honours both.
TEST(Capture, PausesAndLockArraysAreCapturedAndReplayed) {
  const auto d = test::temp_dir("capture_pipeline") / "trace";
  auto r = test::run_cmd("MBPTRACE_OUT=" + d.string() + " " + PIPELINE_TRACED + " 4 1024 3");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("counted 3072 of 3072"), std::string::npos) << r.output;
  trace::validate(d.string());
  const trace::Summary s = trace::summarize(d.string());
  EXPECT_EQ(s.by_kind[static_cast<int>(trace::Kind::Broadcast)], 3u);     // one per round
  EXPECT_EQ(s.by_kind[static_cast<int>(trace::Kind::CondWait)], 3u * 3);  // three waiters a round
  EXPECT_EQ(s.by_kind[static_cast<int>(trace::Kind::Acquire)], 4u + 3072);  // ids, then a lock per element
  EXPECT_GE(s.sync_objects, 16u + 3);
  const auto out = test::temp_dir("capture_pipeline_run");
  r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("splash-mbp16.json") + " --quiet --set trace.path=" + d.string() +
                    " --set network.levels=1 --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(nlohmann::json::parse(test::read_text(out / "stats.json"))["summary"]["finished"].get<bool>());
}

// Every shared allocation is in trace.meta, however many there are: the capture kept only the
// first 4,096 (a fixed array) and `validate` said ok.
TEST(Capture, EverySharedAllocationIsRecorded) {
  const auto d = test::temp_dir("capture_allocs") / "trace";
  const auto r = test::run_cmd("MBPTRACE_OUT=" + d.string() + " " + PIPELINE_TRACED + " 2 64 1 9000");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string meta = test::read_text(d / "trace.meta");
  size_t allocs = 0;
  for (size_t at = meta.find("\nalloc "); at != std::string::npos; at = meta.find("\nalloc ", at + 1)) ++allocs;
  EXPECT_EQ(allocs, 2u + 9000);  // Global, Buf, and the 9,000
  trace::validate(d.string());
}

}  // namespace
}  // namespace mbpsim
