// mbpsim entry point. Debian's libsystemc defines main(), which calls sc_main.
#include <cstdio>

#include <systemc>

#include "models/core/error.h"
#include "models/core/sim_time.h"
#include "sim/cli.h"

int sc_main(int argc, char** argv) {
  mbpsim::set_time_resolution();  // 1 ps: every model counts picoseconds
  try {
    return mbpsim::cli_main(argc, argv);
  } catch (const mbpsim::UserError& e) {
    std::fprintf(stderr, "mbpsim: %s\n", e.what());
    return 1;
  }
}
