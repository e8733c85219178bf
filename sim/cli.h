#pragma once
#include <string>
#include <vector>
namespace mbpsim {
// The `mbpsim` command line; returns the exit status.
int cli_main(int argc, char** argv);
// `mbpsim trace ...` (sim/trace_cmd.cpp).
int cmd_trace(const std::vector<std::string>& args);
}  // namespace mbpsim
