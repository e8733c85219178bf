// The experiment runner: config -> system -> phases -> stats.json, config.resolved.json and
// host.json. Thin: the models and workloads hold all behaviour.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/core/config.h"
#include "models/core/footprint.h"

namespace mbpsim {

class Stats;

struct RunOptions {
  std::string config_path;
  std::vector<std::string> sets;
  std::string out_dir = "out";
  std::optional<uint64_t> seed;
  bool quiet = false;
  bool keep = false;  // refuse to replace an existing --out folder
  // --timeline FILE: the transaction timeline (models/core/timeline.h), with its window in
  // simulated microseconds, its module-name prefixes and its cap on events.
  std::string timeline;
  double timeline_from_us = 0, timeline_to_us = -1;
  std::vector<std::string> timeline_prefixes;
  uint64_t timeline_max_events = 1000000;
  // The command line as typed (host.json, config.resolved.json) and the part of it that decides
  // the results: the config, --set and --seed, without --out, --keep and --quiet (stats.json,
  // so that two runs of one experiment into two folders still write identical bytes).
  std::vector<std::string> argv, result_argv;
};

// The version of this build (git describe, cmake/version.cmake); "unknown" in a program other
// than mbpsim (the test binaries), which never calls set_build_version.
const char* build_version();
void set_build_version(const char* v);
// SHA-256 (hex) of a resolved config, seed included, without the parameters that cannot change
// what is simulated (is_presentation_param): two runs with the same hash simulate the same
// experiment. `mbpsim sweep` uses it to know a finished point when it resumes.
std::string config_sha256(const nlohmann::ordered_json& resolved);
// experiment.heartbeat_s and experiment.max_memory_gb: how a run reports and what it may take,
// never what it simulates (Robustness.TheWallClockNeverChangesTheResults).
bool is_presentation_param(const std::string& key);
// The resolved config a run writes (config.resolved.json without its provenance): every
// parameter, defaults included, and the run seed.
nlohmann::ordered_json resolved_for_run(const Config& c);

// Every parameter of every component, declared once.
const ParamSchema& schema();
// Loads a config file and applies the overrides; throws UserError on bad input.
Config load_config(const std::string& path, const std::vector<std::string>& sets);
// The host memory a run of `c` will hold at its peak, predicted from the config before anything
// is built: this process as it stands, and what its system and workload will allocate.
MemoryForecast forecast_run_memory(const Config& c);
// The most a run may take: experiment.max_memory_gb, or 80% of this host's physical memory.
uint64_t memory_limit_bytes(const Config& c);
// Throws UserError when `f` exceeds memory_limit_bytes(c), naming the largest items and the
// parameters they grow with.
void check_memory(const Config& c, const MemoryForecast& f);
// Checks a config as a run would, without simulating: builds the typed structs and the system.
// `registered`, when given, receives the statistics the system registers (mbpsim stats-doc).
void validate_config(const Config& c, Stats* registered = nullptr);
// Runs one experiment; returns the process exit status (README, "Exit status"): 0 finished,
// 2 a simulated failure or a failed check, 3 stopped by a limit before the workload finished,
// 130 and 143 interrupted by SIGINT and SIGTERM. Bad input throws UserError (status 1).
int run_experiment(const RunOptions& o);

}  // namespace mbpsim
