#pragma once
#include <string>
#include <vector>
namespace mbpsim {
// The `mbpsim` command line; returns the exit status.
int cli_main(int argc, char** argv);
// The same, from the command's name on; `argv`, the command line as typed, is recorded in the
// results (host.json, config.resolved.json).
int cli_main_args(std::vector<std::string> args, const std::vector<std::string>& argv = {});
// `mbpsim sweep ...` (sim/sweep.cpp) and `mbpsim plot ...` (sim/plot_cmd.cpp).
int cmd_sweep(const std::vector<std::string>& args);
int cmd_plot(const std::vector<std::string>& args);
// `mbpsim trace ...` (sim/trace_cmd.cpp).
int cmd_trace(const std::vector<std::string>& args);
}  // namespace mbpsim
