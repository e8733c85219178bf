// The trace-capture tool (mbptrace-cc and its runtime) on the project's own PARMACS kernels:
// its reference counts and its instruction counts equal independent counts (valgrind's lackey
// and cachegrind on the uninstrumented build), the trace validates and replays, condition
// variables and lock arrays are captured, and shared addresses repeat from run to run.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <regex>
#include <string>
#include <vector>

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

// The compute gaps are the program's executed instructions: the instructions the capture
// counted equal cachegrind's count of the program's own code (its source file; libc and the
// runtime excluded, as in the capture) on the uninstrumented build, and the records represent
// them all (gaps + one per reference). Before mbptrace-cc the gaps were an estimate (3 per
// private access + 2 per call) that undercounted SPLASH-2 codes about 4x.
TEST(Capture, GapsAreTheProgramsInstructionsAsCachegrindCountsThem) {
  if (test::run_cmd("valgrind --version").status != 0) GTEST_SKIP() << "valgrind is not installed (scripts/setup.sh installs it)";
  const std::string args = "4 4096 3";
  const std::string dir = capture("icount", args);
  const trace::Meta m = trace::read_meta(dir);
  ASSERT_GT(m.instructions, 0u) << "trace.meta has no instructions line";
  const trace::Summary s = trace::summarize(dir);
  const uint64_t represented = s.gap_total + s.by_kind[1] + s.by_kind[2] + s.by_kind[3];
  const auto d = test::temp_dir("capture_icount_run");
  const std::string out = (d / "cg.out").string();
  auto r = test::run_cmd("MBPTRACE_OUT=" + (d / "t").string() + " valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=" + out +
                         " " + STENCIL_PLAIN + " " + args);
  ASSERT_EQ(r.status, 0) << r.output;
  // The uninstrumented build says what its trace is not (and keeps the host's order: its
  // logical time would never advance).
  EXPECT_NE(test::read_text(d / "t" / "trace.meta").find("not built by mbptrace-cc"), std::string::npos);
  // cachegrind's file: `fl=` names a source file, then lines `LINE IR`.
  uint64_t program = 0;
  bool ours = false;
  std::ifstream f(out);
  for (std::string l; std::getline(f, l);) {
    if (l.rfind("fl=", 0) == 0) {
      ours = l.size() >= 12 && (l.substr(l.size() - 9) == "stencil.C" || l.substr(l.size() - 9) == "stencil.c");
      continue;
    }
    if (!ours || l.empty() || !std::isdigit(static_cast<unsigned char>(l[0]))) continue;
    std::istringstream is(l);
    uint64_t line = 0, ir = 0;
    if (is >> line >> ir) program += ir;
  }
  std::printf("capture counted %llu instructions, the records represent %llu; cachegrind: %llu in stencil.C\n",
              static_cast<unsigned long long>(m.instructions), static_cast<unsigned long long>(represented),
              static_cast<unsigned long long>(program));
  ASSERT_GT(program, 100000u);
  EXPECT_NEAR(static_cast<double>(m.instructions), static_cast<double>(program), 0.02 * program);
  EXPECT_NEAR(static_cast<double>(represented), static_cast<double>(m.instructions), 0.001 * m.instructions);
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

// The second kernel: a producer hands a buffer over with SETPAUSE/WAITPAUSE each round, every
// thread updates histogram buckets under an array of locks, and the threads meet on a condition
// variable (CONDVARWAIT under an AGETL lock; the last arriver signals, each woken thread signals
// the next). Pause hand-offs become broadcast/cwait records, condition waits release/cwait/
// acquire with the wake-up that woke them, and the replay honours all of it.
TEST(Capture, PausesAndLockArraysAreCapturedAndReplayed) {
  const auto d = test::temp_dir("capture_pipeline") / "trace";
  auto r = test::run_cmd("MBPTRACE_OUT=" + d.string() + " " + PIPELINE_TRACED + " 4 1024 3");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("counted 3072 of 3072"), std::string::npos) << r.output;
  trace::validate(d.string());
  const trace::Summary s = trace::summarize(d.string());
  EXPECT_EQ(s.by_kind[static_cast<int>(trace::Kind::Broadcast)], 3u);         // SETPAUSE, one per round
  EXPECT_EQ(s.by_kind[static_cast<int>(trace::Kind::Signal)], 3u * 4);         // CONDVARSIGNAL, P a round
  EXPECT_EQ(s.by_kind[static_cast<int>(trace::Kind::CondWait)], 3u * 3 + 3 * 3);  // 3 WAITPAUSEs + 3 CONDVARWAITs a round
  // ids, a lock per element, then each round 4 arrivals and 3 re-acquisitions after a wait
  EXPECT_EQ(s.by_kind[static_cast<int>(trace::Kind::Acquire)], 4u + 3072 + 3 * (4 + 3));
  EXPECT_GE(s.sync_objects, 16u + 5);
  // Each condition wait is the lock's release, the wait, and the lock again, in that order
  // (WAITPAUSE's waits hold no program lock); deps may stand in front of the acquire.
  const trace::Meta m = trace::read_meta(d.string());
  uint64_t waits = 0;
  for (uint32_t t = 0; t < m.threads; ++t) {
    auto in = trace::open_stream(d.string(), m, t);
    trace::Record prev, r;
    bool after_wait = false;
    uint64_t wait_lock = 0;
    while (in->next(r)) {
      if (r.kind == trace::Kind::CondWait && prev.kind == trace::Kind::Release) {
        after_wait = true;
        wait_lock = prev.addr;
      } else if (after_wait && r.kind != trace::Kind::Dep) {
        EXPECT_EQ(r.kind, trace::Kind::Acquire) << "thread " << t << ": a condition wait is not followed by its lock";
        EXPECT_EQ(r.addr, wait_lock);
        after_wait = false;
        ++waits;
      }
      prev = r;
    }
  }
  EXPECT_EQ(waits, 3u * 3);
  const auto out = test::temp_dir("capture_pipeline_run");
  r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("splash-mbp16.json") + " --quiet --set trace.path=" + d.string() +
                    " --set network.levels=1 --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(nlohmann::json::parse(test::read_text(out / "stats.json"))["summary"]["finished"].get<bool>());
}

// Data handed through locks (traces/FORMAT.md, `dep`): in the pipeline kernel every thread adds
// to histogram buckets under their locks, reading what the bucket's previous holder stored.
// Each dep the capture writes stands in front of an outermost acquire, names another thread's
// store, and the critical section after it reads bytes that store wrote.
TEST(Capture, DataReadUnderALockWaitsForItsWriter) {
  const auto d = test::temp_dir("capture_deps") / "trace";
  const auto r = test::run_cmd("MBPTRACE_OUT=" + d.string() + " " + PIPELINE_TRACED + " 4 64 2");
  ASSERT_EQ(r.status, 0) << r.output;
  const trace::Meta m = trace::read_meta(d.string());
  std::vector<std::vector<trace::Record>> all(m.threads), nondep(m.threads);
  for (uint32_t t = 0; t < m.threads; ++t) {
    auto in = trace::open_stream(d.string(), m, t);
    trace::Record x;
    while (in->next(x)) {
      all[t].push_back(x);
      if (x.kind != trace::Kind::Dep) nondep[t].push_back(x);
    }
  }
  uint64_t deps = 0;
  for (uint32_t t = 0; t < m.threads; ++t) {
    const auto& v = all[t];
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i].kind != trace::Kind::Dep) continue;
      ++deps;
      SCOPED_TRACE("thread " + std::to_string(t) + ", record " + std::to_string(i));
      ASSERT_NE(v[i].thread, t);
      ASSERT_LT(v[i].thread, m.threads);
      ASSERT_LT(v[i].seq, nondep[v[i].thread].size());
      const trace::Record& w = nondep[v[i].thread][v[i].seq];
      EXPECT_TRUE(w.kind == trace::Kind::Store || w.kind == trace::Kind::Rmw) << trace::name(w.kind);
      size_t j = i;
      while (j < v.size() && v[j].kind == trace::Kind::Dep) ++j;
      ASSERT_LT(j, v.size());
      EXPECT_EQ(v[j].kind, trace::Kind::Acquire);
      bool reads = false;
      for (int held = 0; j < v.size(); ++j) {
        held += v[j].kind == trace::Kind::Acquire;
        held -= v[j].kind == trace::Kind::Release;
        if ((v[j].kind == trace::Kind::Load || v[j].kind == trace::Kind::Rmw) && v[j].addr < w.addr + w.size && w.addr < v[j].addr + v[j].size)
          reads = true;
        if (held == 0) break;
      }
      EXPECT_TRUE(reads) << "the critical section reads nothing the dep's store wrote";
    }
  }
  EXPECT_GT(deps, 20u);
}

// The streams of a trace, concatenated: what must not depend on the host.
std::string stream_bytes(const std::string& dir) {
  const trace::Meta m = trace::read_meta(dir);
  std::string all;
  for (uint32_t t = 0; t < m.threads; ++t) {
    auto in = trace::open_stream(dir, m, t);
    trace::Record r;
    while (in->next(r))
      all += std::to_string(static_cast<int>(r.kind)) + " " + std::to_string(r.gap) + " " + std::to_string(r.addr) + " " +
             std::to_string(r.size) + " " + std::to_string(r.seq) + " " + std::to_string(r.thread) + "\n";
  }
  return all;
}

// Synchronisation is captured in logical-time order (instructions executed, Kendo's rule), so
// a lock-heavy program gives the same trace whatever the host does: on one core, where 8
// threads time-share it, and on two. The host's order (MBPTRACE_ORDER=host) is kept as an
// option; a bad value is refused with exit status 1.
TEST(Capture, SynchronisationOrderDoesNotDependOnTheHost) {
  const std::string args = " 8 2048 3";
  std::vector<std::string> got;
  for (const char* cpus : {"0", "0,1", "0"}) {
    const auto d = test::temp_dir(std::string("capture_order_") + std::to_string(got.size())) / "trace";
    const auto r = test::run_cmd("MBPTRACE_OUT=" + d.string() + " taskset -c " + cpus + " " + PIPELINE_TRACED + args + " 2>&1 || "
                                 "MBPTRACE_OUT=" + d.string() + " " + PIPELINE_TRACED + args);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("counted 6144 of 6144"), std::string::npos) << r.output;
    EXPECT_NE(test::read_text(d / "trace.meta").find("logical-time order"), std::string::npos);
    got.push_back(stream_bytes(d.string()));
  }
  EXPECT_GT(got[0].size(), 10000u);
  EXPECT_TRUE(got[0] == got[1]) << "one core and two gave different traces";
  EXPECT_TRUE(got[0] == got[2]) << "two runs on one core gave different traces";

  const auto h = test::temp_dir("capture_order_host") / "trace";
  auto r = test::run_cmd("MBPTRACE_ORDER=host MBPTRACE_OUT=" + h.string() + " " + PIPELINE_TRACED + args);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(test::read_text(h / "trace.meta").find("the host's order"), std::string::npos);
  trace::validate(h.string());
  r = test::run_cmd("MBPTRACE_ORDER=random MBPTRACE_OUT=" + (h.parent_path() / "bad").string() + " " + PIPELINE_TRACED + args + " 2>&1");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("MBPTRACE_ORDER must be instructions or host, not 'random'"), std::string::npos) << r.output;
}

// The suite runner (scripts/splash-suite.sh) on a folder of captures: stencil-4t with its
// one-thread capture stencil-1t, pipe-4t without one (time-shared baseline, labelled so), and a
// broken trace. Each row's speedups are the baseline's time over the run's, for the whole run
// and the region of interest, from the runs' own stats; the broken trace is a failed row and
// the suite's status is 3; the others still ran.
TEST(Capture, TheSuiteRunnerTabulatesSpeedupsOverARealOneThreadRun) {
  const auto d = test::temp_dir("capture_suite");
  const auto t = d / "traces";
  fs::create_directories(t);
  ASSERT_EQ(test::run_cmd("MBPTRACE_OUT=" + (t / "stencil-4t").string() + " " + STENCIL_TRACED + " 4 4096 2").status, 0);
  ASSERT_EQ(test::run_cmd("MBPTRACE_OUT=" + (t / "stencil-1t").string() + " " + STENCIL_TRACED + " 1 4096 2").status, 0);
  ASSERT_EQ(test::run_cmd("MBPTRACE_OUT=" + (t / "pipe-4t").string() + " " + PIPELINE_TRACED + " 4 512 1").status, 0);
  fs::create_directories(t / "broken-2t");
  test::write_text(t / "broken-2t" / "trace.meta", "garbage\n");
  const auto out = d / "out";
  const auto r = test::run_cmd(std::string("MBPSIM=") + MBPSIM_BINARY + " bash " + MBPSIM_SOURCE_DIR + "/scripts/splash-suite.sh " + t.string() +
                               " --out " + out.string() + " --nodes 4,16");
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_NE(r.output.find("6 runs, 2 failed"), std::string::npos) << r.output;
  std::ifstream csv(out / "suite.csv");
  std::string header;
  std::getline(csv, header);
  std::vector<std::string> names;
  for (std::istringstream h(header); std::getline(h, names.emplace_back(), ',');) {
  }
  names.pop_back();
  std::map<std::string, std::map<std::string, std::string>> rows;  // "trace/nodes" -> field -> value
  for (std::string line; std::getline(csv, line);) {
    std::map<std::string, std::string> row;
    std::istringstream is(line);
    for (const auto& n : names) std::getline(is, row[n], ',');
    rows[row["trace"] + "/" + row["nodes"]] = row;
  }
  ASSERT_EQ(rows.size(), 6u);
  auto summary = [&](const std::string& run) {
    return nlohmann::json::parse(test::read_text(out / "runs" / run / "stats.json"))["summary"];
  };
  const auto base = summary("stencil-4t.baseline");
  EXPECT_EQ(base["threads"].get<int>(), 1);  // the one-thread capture, not the 4-thread trace
  for (const char* n : {"4", "16"}) {
    const auto& row = rows["stencil-4t/" + std::string(n)];
    EXPECT_EQ(row.at("status"), "ok");
    EXPECT_EQ(row.at("baseline"), "one-thread trace");
    const auto par = summary(std::string("stencil-4t.") + n);
    EXPECT_NEAR(std::stod(row.at("speedup")), base["exec_time_s"].get<double>() / par["exec_time_s"].get<double>(), 1e-4);
    EXPECT_NEAR(std::stod(row.at("roi_speedup")), base["roi_time_s"].get<double>() / par["roi_time_s"].get<double>(), 1e-4);
    EXPECT_NEAR(std::stod(row.at("sync_fraction")), par["sync_fraction"].get<double>(), 1e-5);
    EXPECT_GT(std::stod(row.at("host_references_per_s")), 0);
  }
  EXPECT_EQ(rows["pipe-4t/16"].at("baseline"), "time-shared");
  EXPECT_EQ(rows["pipe-4t/16"].at("roi_speedup"), "");  // no region of interest: not measured, not 0
  EXPECT_EQ(rows["broken-2t/4"].at("status"), "failed (exit 1)");
  EXPECT_NE(rows["broken-2t/4"].at("error").find("not an mbpsim trace"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "suite.md"));
  // Bad arguments: one line, status 1.
  const auto bad = test::run_cmd(std::string("bash ") + MBPSIM_SOURCE_DIR + "/scripts/splash-suite.sh " + t.string() + " --nodes 8 2>&1");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.output.find("--nodes: 8 is not a power of 4"), std::string::npos) << bad.output;
}

// A copy longer than the format's largest record (64 KiB) becomes several records, each at its
// own address: the capture used to repeat the first address for every piece.
TEST(Capture, ALongCopyIsSplitIntoRecordsThatCoverIt) {
  const auto d = test::temp_dir("capture_copy") / "trace";
  const auto r = test::run_cmd("MBPTRACE_OUT=" + d.string() + " " + PIPELINE_TRACED + " 1 64 1 0 150000");
  ASSERT_EQ(r.status, 0) << r.output;
  const trace::Meta m = trace::read_meta(d.string());
  ASSERT_EQ(m.allocations.size(), 4u);  // Global, Buf, from, to
  const uint64_t from = m.allocations[2].addr, to = m.allocations[3].addr;
  std::vector<std::pair<uint64_t, uint64_t>> loads, stores;  // the copy's records: address, size
  auto in = trace::open_stream(d.string(), m, 0);
  trace::Record rec;
  while (in->next(rec)) {
    if (rec.kind == trace::Kind::Load && rec.addr >= from && rec.addr < from + 150000) loads.emplace_back(rec.addr, rec.size);
    if (rec.kind == trace::Kind::Store && rec.addr >= to && rec.addr < to + 150000) stores.emplace_back(rec.addr, rec.size);
  }
  const std::vector<std::pair<uint64_t, uint64_t>> want_loads = {{from, 65536}, {from + 65536, 65536}, {from + 131072, 150000 - 131072}};
  const std::vector<std::pair<uint64_t, uint64_t>> want_stores = {{to, 65536}, {to + 65536, 65536}, {to + 131072, 150000 - 131072}};
  EXPECT_EQ(loads, want_loads);
  EXPECT_EQ(stores, want_stores);
}

// mbptrace-cc on a program of its own: struct assignments and an inlined memset of shared
// data, which gcc turns into block moves (string instructions or vector moves) that the old
// tsan-based capture did not see. Every byte of the memset is stored (gcc's expansion stores
// two words twice: its head and tail moves overlap the rep stosq), and every byte of the copy
// is loaded from the source and stored to the destination, once; a fence between them is one
// fence record (its hook once depended on %rdi happening to point into the arena); the
// instructions are counted.
TEST(Capture, BlockMovesOfSharedDataAreRecorded) {
  const auto d = test::temp_dir("capture_blockmove");
  test::write_text(d / "blockmove.c", R"(#include "mbptrace.h"
#include <stdio.h>
struct big { long a[64]; };
__attribute__((noinline)) void copy(struct big *to, const struct big *from) { *to = *from; }
__attribute__((noinline)) void clear(struct big *b) { __builtin_memset(b, 0, sizeof *b); }
long fences_made; /* private: the fence below runs with %rdi pointing here, not into the arena */
__attribute__((noinline)) void fence(long *n) { __atomic_thread_fence(__ATOMIC_SEQ_CST); ++*n; }
int main(void) {
  mbpt_init();
  struct big *x = mbpt_malloc(sizeof *x), *y = mbpt_malloc(sizeof *y);
  clear(x);
  fence(&fences_made); /* gcc: lock orq $0, (%rsp): one fence record */
  copy(y, x);
  printf("%ld\n", y->a[63]);
  mbpt_finish();
  return 0;
}
)");
  const std::string bin = (d / "blockmove").string();
  auto r = test::run_cmd(std::string("python3 ") + MBPTRACE_CC + " -O2 " + (d / "blockmove.c").string() + " -o " + bin + " 2>&1");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto t = d / "trace";
  r = test::run_cmd("MBPTRACE_OUT=" + t.string() + " " + bin);
  ASSERT_EQ(r.status, 0) << r.output;
  const trace::Meta m = trace::read_meta(t.string());
  ASSERT_EQ(m.allocations.size(), 2u);
  const uint64_t x = m.allocations[0].addr, y = m.allocations[1].addr;
  uint64_t x_loaded = 0, y_stored = 0, fences = 0;
  std::vector<bool> x_covered(512, false);
  auto in = trace::open_stream(t.string(), m, 0);
  trace::Record rec;
  while (in->next(rec)) {
    if (rec.kind == trace::Kind::Store && rec.addr >= x && rec.addr < x + 512)
      for (uint64_t b = rec.addr - x; b < std::min<uint64_t>(512, rec.addr - x + rec.size); ++b) x_covered[b] = true;
    if (rec.kind == trace::Kind::Load && rec.addr >= x && rec.addr < x + 512) x_loaded += rec.size;
    if (rec.kind == trace::Kind::Store && rec.addr >= y && rec.addr < y + 512) y_stored += rec.size;
    if (rec.kind == trace::Kind::Fence) ++fences;
  }
  EXPECT_EQ(std::count(x_covered.begin(), x_covered.end(), true), 512);  // the memset
  EXPECT_EQ(x_loaded, 512u);  // the copy's source
  EXPECT_EQ(y_stored, 512u);  // and its destination
  EXPECT_EQ(fences, 1u);      // the fence, whatever %rdi held
  EXPECT_GT(m.instructions, 0u);
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

// The replay benchmark's kernels (tests/perf/bench.cpp): the six-step FFT and the blocked LU
// check their results under capture (FFT: four outputs against a direct DFT, and the inverse
// transform against the input; LU: the factors solve A x = A 1), their traces have the phases
// the algorithms have, and they replay to the end with the sharing the algorithms imply.
TEST(Capture, TheBenchmarksFftAndLuCheckThemselvesAndReplay) {
  struct Case {
    const char* name;
    std::string cmd;
    const char* says;
    uint64_t barriers;  // per thread
  };
  // FFT: the start, five between the six steps, the start of the inverse and its five. LU with
  // 64 / 16 = 4 block columns: the start and three per step.
  const std::vector<Case> cases = {{"fft", std::string(FFT_TRACED) + " 4 10 1", "inverse(forward(x)) - x", 1 + 5 + 1 + 5},
                                   {"lu", std::string(LU_TRACED) + " 4 64 16", "max |x - 1|", 1 + 3 * 4}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto d = test::temp_dir(std::string("capture_") + c.name) / "trace";
    const auto r = test::run_cmd("MBPTRACE_OUT=" + d.string() + " " + c.cmd);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("FAILED"), std::string::npos) << r.output;
    trace::validate(d.string());
    const trace::Summary s = trace::summarize(d.string());
    EXPECT_EQ(s.by_kind[static_cast<int>(trace::Kind::Barrier)], 4 * c.barriers);
    const auto out = test::temp_dir(std::string("capture_replay_") + c.name);
    const auto run = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("splash-mbp16.json") + " --quiet --set trace.path=" +
                                   d.string() + " --set node.procs=1 --set network.levels=1 --out " + out.string());
    ASSERT_EQ(run.status, 0) << run.output;
    const auto st = nlohmann::json::parse(test::read_text(out / "stats.json"))["summary"];
    EXPECT_TRUE(st["finished"].get<bool>());
    // Every thread reads what others wrote (the transposes; the row and column blocks), so
    // blocks come from other nodes and writes invalidate copies elsewhere.
    EXPECT_GT(st["served_via_mbp"].get<uint64_t>(), 100u);
    EXPECT_GT(st["coherence_rounds"].get<uint64_t>(), 10u);
  }
}

// A kernel refuses arguments it cannot run with, with exit status 2 and a message.
TEST(Capture, TheBenchmarkKernelsRefuseBadSizes) {
  for (const std::string& cmd : {std::string(FFT_TRACED) + " 3 10", std::string(FFT_TRACED) + " 4 9", std::string(LU_TRACED) + " 4 100 16"}) {
    const auto r = test::run_cmd(cmd);
    EXPECT_EQ(r.status, 2) << cmd << ": " << r.output;
    EXPECT_FALSE(r.output.empty()) << cmd;
  }
}

}  // namespace
}  // namespace mbpsim
