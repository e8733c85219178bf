#pragma once
#include <cstdint>
#include <string>
#include <vector>
namespace mbpsim {
// The seeds of a --seed option (run, validate and stats-doc take one, a sweep a list):
// N[,N...] or [N,...], each a whole number >= 0; anything else is refused in one line.
std::vector<uint64_t> parse_seeds(const std::string& text);
// `text`, the value of command-line option `option`, as a whole number in [lo, hi]; anything
// else (a sign, a fraction, an exponent, trailing characters) is refused in one line.
uint64_t parse_whole(const std::string& option, const std::string& text, uint64_t lo, uint64_t hi);
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
