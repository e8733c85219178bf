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
};

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
