// The host CPU's time sharing alone (models/host/cpu.h): interrupts queue and delay user work,
// later user work preempts earlier work, poll loops notice one iteration late, power loss.
#include <gtest/gtest.h>

#include <vector>

#include "models/core/calendar.h"
#include "models/host/cpu.h"

namespace {

using namespace mbpsim;

constexpr uint64_t kUsPs = 1000000;  // ps

struct CpuRig {
  Calendar cal{"cal"};
  host::Cpu cpu{"cpu", cal, 100.0, 50.0};  // 100 MHz: a cycle is 10 ns; a poll iteration 500 ns
  std::vector<std::pair<char, uint64_t>> ends;
  std::function<void()> mark(char what) {
    return [this, what] { ends.emplace_back(what, cal.now_ps()); };
  }
  void run() { sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS)); }
};

TEST(HostCpu, InterruptsQueueAndDelayTheUserWorkTheyLandOn) {
  CpuRig h;
  EXPECT_EQ(h.cpu.cycles_ps(100), 1 * kUsPs);
  h.cpu.compute(100 * kUsPs, h.mark('u'));
  h.cal.at(10 * kUsPs, [&h] {
    h.cpu.interrupt(5 * kUsPs, h.mark('a'));
    h.cpu.interrupt(7 * kUsPs, h.mark('b'));  // waits for the first routine
  });
  h.run();
  ASSERT_EQ(h.ends.size(), 3u);
  EXPECT_EQ(h.ends[0], std::make_pair('a', 15 * kUsPs));
  EXPECT_EQ(h.ends[1], std::make_pair('b', 22 * kUsPs));
  EXPECT_EQ(h.ends[2], std::make_pair('u', 112 * kUsPs));  // 100 us of work plus 12 of routines
  EXPECT_EQ(h.cpu.busy_ps(), 12 * kUsPs);
}

TEST(HostCpu, LaterUserWorkPreemptsAndThePreemptedResumesWithWhatItStillNeeded) {
  CpuRig h;
  h.cpu.compute(100 * kUsPs, h.mark('a'));
  h.cal.at(30 * kUsPs, [&h] { h.cpu.compute(20 * kUsPs, h.mark('b')); });
  h.run();
  ASSERT_EQ(h.ends.size(), 2u);
  EXPECT_EQ(h.ends[0], std::make_pair('b', 50 * kUsPs));
  EXPECT_EQ(h.ends[1], std::make_pair('a', 120 * kUsPs));
  EXPECT_EQ(h.cpu.busy_ps(), 0u);  // user work is not communication time
  h.cpu.charge(3 * kUsPs);
  EXPECT_EQ(h.cpu.busy_ps(), 3 * kUsPs);
}

TEST(HostCpu, APollLoopNoticesOneIterationAfterTheConditionIsChecked) {
  CpuRig h;
  bool flag = false;
  h.cpu.poll([&flag] { return flag; }, h.mark('p'));
  h.cal.at(40 * kUsPs, [&] {
    flag = true;
    h.cpu.run_pollers(h.cal.now_ps());
  });
  h.cpu.poll([] { return true; }, h.mark('q'));  // already true: one iteration of user work
  h.run();
  ASSERT_EQ(h.ends.size(), 2u);
  EXPECT_EQ(h.ends[0], std::make_pair('q', kUsPs / 2));
  EXPECT_EQ(h.ends[1], std::make_pair('p', 40 * kUsPs + kUsPs / 2));
}

TEST(HostCpu, PowerLossEndsTheUserProgramAndItsPollers) {
  CpuRig h;
  h.cpu.compute(100 * kUsPs, h.mark('u'));
  h.cpu.poll([] { return false; }, h.mark('p'));
  h.cal.at(10 * kUsPs, [&h] { h.cpu.power_off(); });
  h.cal.at(20 * kUsPs, [&h] { h.cpu.run_pollers(h.cal.now_ps()); });
  h.run();
  EXPECT_TRUE(h.ends.empty());
}

}  // namespace
