// Simulated time is picoseconds, and SystemC's resolution is set to one picosecond explicitly
// (models/core/sim_time.h) by every sc_main, this test binary's included.
#include <gtest/gtest.h>

#include <systemc>

#include "models/core/sim_time.h"

namespace mbpsim {
namespace {

TEST(SimTime, TheResolutionIsSetExplicitlyToOnePicosecond) {
  EXPECT_TRUE(time_resolution_is_ps());
  // Set once already (SystemC refuses a second setting); without the explicit call a test
  // process could still choose another resolution here.
  EXPECT_THROW(sc_core::sc_set_time_resolution(1, sc_core::SC_NS), sc_core::sc_report);
  EXPECT_EQ(sc_core::sc_time(3, sc_core::SC_NS).value(), 3000u);
}

}  // namespace
}  // namespace mbpsim
