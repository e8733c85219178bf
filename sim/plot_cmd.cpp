// `mbpsim plot`: a thin front for scripts/mbpsim_plot.py (python3-matplotlib), which draws a
// sweep's table (sim/README.md, "Plots"). The script is found in the source tree this program
// was built from, or at $MBPSIM_PLOT_SCRIPT.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "models/core/error.h"
#include "sim/cli.h"

#ifndef MBPSIM_SOURCE_DIR
#define MBPSIM_SOURCE_DIR "."
#endif

namespace mbpsim {

int cmd_plot(const std::vector<std::string>& args) {
  std::string script = std::string(MBPSIM_SOURCE_DIR) + "/scripts/mbpsim_plot.py";
  if (const char* s = std::getenv("MBPSIM_PLOT_SCRIPT")) script = s;
  if (!std::filesystem::exists(script))
    throw UserError("plot: " + script + " is missing (set MBPSIM_PLOT_SCRIPT to scripts/mbpsim_plot.py of the source tree)");
  // Debian's python3 (where python3-matplotlib is), before another one on the PATH.
  const std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  std::vector<std::string> av{python, script};
  av.insert(av.end(), args.begin(), args.end());
  std::vector<char*> cav;
  for (auto& s : av) cav.push_back(s.data());
  cav.push_back(nullptr);
  std::fflush(stdout);
  ::execvp(python.c_str(), cav.data());
  throw UserError(std::string("plot: cannot start python3: ") + std::strerror(errno) + " (apt-get install python3-matplotlib)");
}

}  // namespace mbpsim
