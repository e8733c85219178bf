// Helpers shared by the tests.
#pragma once
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "models/core/stats.h"
#include "sim/runner.h"
#include "tests/temp_dirs.h"

// Defined in a build under AddressSanitizer, which reserves terabytes of address space (a
// memory limit cannot be set) and replaces glibc's allocator (whose statistics then read 0).
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MBPSIM_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define MBPSIM_TEST_ASAN 1
#endif

namespace mbpsim::test {

// A fresh, empty folder for this process: $TMPDIR/mbpsim_test_NAME_PID.
inline std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("mbpsim_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  temp_dirs_made().push_back(d);
  return d;
}

// A registered stat's value by its dotted path (Stats::counter would register it again).
inline double stat_value(const mbpsim::Stats& st, const std::string& path) {
  nlohmann::ordered_json j = st.dump();
  const nlohmann::ordered_json* at = &j;
  size_t b = 0;
  for (;;) {
    const size_t e = path.find('.', b);
    const std::string part = path.substr(b, e == std::string::npos ? std::string::npos : e - b);
    if (!at->contains(part)) throw std::runtime_error("no stat " + path);
    at = &(*at)[part];
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return at->get<double>();
}

// How many lines a command printed (its newline characters).
inline int count_lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void write_text(const std::filesystem::path& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary);
  f << s;
}

// Runs one experiment in this process (one per test: SystemC elaborates once per process).
inline nlohmann::json run_in_process(const nlohmann::json& cfg, const std::string& name,
                                     int* status = nullptr) {
  auto d = temp_dir(name);
  write_text(d / "config.json", cfg.dump(2));
  RunOptions o;
  o.config_path = (d / "config.json").string();
  o.out_dir = (d / "out").string();
  o.quiet = true;
  const int rc = run_experiment(o);
  if (status) *status = rc;
  nlohmann::json st;
  // Finished (0) or stopped by its limit (3): the run wrote its stats.
  if (rc == 0 || rc == 3) st = nlohmann::json::parse(read_text(d / "out" / "stats.json"));
  std::filesystem::remove_all(d);
  return st;
}

struct CmdResult {
  int status;
  std::string output;  // stdout and stderr together
};

// Runs a shell command (the mbpsim binary) and collects its exit status and output.
inline CmdResult run_cmd(const std::string& cmd) {
  CmdResult r{0, ""};
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// Writes a text trace (traces/FORMAT.md) into `dir` from one string of record lines per
// thread, adding the metadata, the stream headers and the end lines (which count the record
// lines: not blank, not only a comment). Returns `dir`.
inline std::string write_text_trace(const std::filesystem::path& dir, const std::vector<std::string>& threads) {
  std::filesystem::create_directories(dir);
  write_text(dir / "trace.meta", "mbpsim-trace 1\nprogram test\nthreads " + std::to_string(threads.size()) + "\nencoding text\n");
  for (size_t t = 0; t < threads.size(); ++t) {
    size_t n = 0;
    std::istringstream is(threads[t]);
    for (std::string l; std::getline(is, l);) {
      l = l.substr(0, l.find('#'));
      n += l.find_first_not_of(" \t") != std::string::npos;
    }
    write_text(dir / ("thread-" + std::to_string(t) + ".txt"),
               "mbpsim-trace-stream 1 thread " + std::to_string(t) + "\n" + threads[t] + "end-of-stream " + std::to_string(n) + "\n");
  }
  return dir.string();
}

// A fuzz harness's seed corpus (tests/fuzz/corpus/NAME), and whether the tests that check it
// should rewrite it first (MBPSIM_REGEN_CORPUS=1, after a deliberate format change).
inline std::filesystem::path fuzz_corpus(const std::string& name) {
  return std::filesystem::path(MBPSIM_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / name;
}
inline bool regen_corpus() { return std::getenv("MBPSIM_REGEN_CORPUS") != nullptr; }

inline std::string mbpsim_bin() { return std::string("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 ") + MBPSIM_BINARY; }
inline std::string config_path(const std::string& name) {
  return std::string(MBPSIM_SOURCE_DIR) + "/configs/" + name;
}

// One `mbpsim run` as a user would type it, in a subprocess: what it printed, its exit status,
// and the stats.json it wrote.
struct Run {
  int status = -1;
  std::string output;        // stdout and stderr together
  std::string command;       // the command line, for failure messages
  std::filesystem::path out; // the --out folder (kept until the test process ends)
  nlohmann::json stats;      // stats.json, or null when the run wrote none
  const nlohmann::json& summary() const { return stats["summary"]; }
  // host.json: the run's host-side figures (wall and CPU time, the network's step counts).
  nlohmann::json host() const { return nlohmann::json::parse(read_text(out / "host.json")); }
};

// Runs `config` (a shipped config's file name, or a path) with further arguments (`--set`,
// `--seed`) into a fresh output folder. Every test that runs a config and reads its statistics
// goes through here.
inline Run run_config(const std::string& config, const std::string& args = "") {
  static int calls = 0;  // one folder per call and process: ctest -j runs tests side by side
  Run r;
  r.out = temp_dir("run_" + std::to_string(++calls)) / "o";
  const std::string path = config.find('/') == std::string::npos ? config_path(config) : config;
  r.command = mbpsim_bin() + " run " + path + " --quiet --out " + r.out.string() + " " + args;
  const CmdResult c = run_cmd(r.command);
  r.status = c.status;
  r.output = c.output;
  if (std::filesystem::exists(r.out / "stats.json")) r.stats = nlohmann::json::parse(read_text(r.out / "stats.json"));
  return r;
}

// run_config for a run that must finish (exit status 0): a test failure naming the command
// and the output if it does not.
inline Run run_ok(const std::string& config, const std::string& args = "") {
  Run r = run_config(config, args);
  EXPECT_EQ(r.status, 0) << r.command << "\n" << r.output;
  return r;
}

}  // namespace mbpsim::test
