// mbpsim entry point. Debian's libsystemc defines main(), which calls sc_main.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include <systemc>

#include "models/core/error.h"
#include "models/core/sim_time.h"
#include "sim/cli.h"
#include "sim/runner.h"

// cmake/version.cmake writes it into the build folder.
const char* mbpsim_build_version();
#ifdef MBPSIM_HAVE_MPI
namespace mbpsim {
void install_mpi_sweep();
}
#endif

namespace {

// SystemC's own reports go to stderr, never stdout (which holds the results). The kernel's
// "Simulation stopped by user" (the network calls sc_stop when a watchdog fires) says nothing
// the failure line does not.
void report_to_stderr(const sc_core::sc_report& r, const sc_core::sc_actions& actions) {
  if ((actions & sc_core::SC_DISPLAY) && !(r.get_severity() == sc_core::SC_INFO &&
                                           std::strstr(r.get_msg(), "stopped by user") != nullptr)) {
    std::fprintf(stderr, "%s\n", sc_core::sc_report_compose_message(r).c_str());
  }
  sc_core::sc_report_handler::default_handler(r, actions & ~sc_core::SC_DISPLAY);
}

int out_of_memory() {
  std::fprintf(stderr, "mbpsim: out of memory while %s: the config asks for more memory than this host (or its "
                       "ulimit -v) gives\n", mbpsim::phase());
  return 1;
}

}  // namespace

// SystemC's banner (its name, version and copyright) would open every run's output. Its main()
// prints it before sc_main, unless this is set; a static initialiser runs before main() (an
// environment that sets the variable already keeps its value).
const bool kNoSystemCBanner = ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0) == 0;

int sc_main(int argc, char** argv) {
  mbpsim::set_time_resolution();  // 1 ps: every model counts picoseconds
  sc_core::sc_report_handler::set_handler(report_to_stderr);
  mbpsim::set_build_version(mbpsim_build_version());
#ifdef MBPSIM_HAVE_MPI
  mbpsim::install_mpi_sweep();
#endif
  try {
    return mbpsim::cli_main(argc, argv);
  } catch (const mbpsim::UserError& e) {
    std::fprintf(stderr, "mbpsim: %s\n", mbpsim::printable(e.what()).c_str());
    return 1;
  } catch (const std::bad_alloc&) {
    return out_of_memory();
  } catch (const sc_core::sc_report& r) {
    // An exception thrown inside a SystemC process reaches here as a report (E549).
    if (std::strstr(r.what(), "bad_alloc") != nullptr) return out_of_memory();
    throw;
  }
}
