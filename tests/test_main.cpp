// Test binaries define sc_main (libsystemc owns main) and run GoogleTest from it.
#include <cstdlib>

#include <gtest/gtest.h>
#include <systemc>

#include "models/core/sim_time.h"
#include "tests/temp_dirs.h"

int sc_main(int argc, char** argv) {
  mbpsim::set_time_resolution();  // as the mbpsim binary does (models/core/sim_time.h)
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  if (rc == 0 && !std::getenv("MBPSIM_KEEP_TEST_DIRS")) {
    std::error_code ec;
    for (const auto& d : mbpsim::test::temp_dirs_made()) std::filesystem::remove_all(d, ec);
  }
  return rc;
}
