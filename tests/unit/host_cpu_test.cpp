// The host CPU's time sharing alone (models/host/cpu.h): interrupts queue and delay user work,
// later user work preempts earlier work, poll loops notice one iteration late, power loss.
#include <gtest/gtest.h>

#include <vector>

#include "models/core/calendar.h"
#include "models/host/cpu.h"

namespace {

using namespace mbpsim;

constexpr uint64_t kUs = 1000000;  // ps

struct Host {
  Calendar cal{"cal"};
  host::Cpu cpu{"cpu", cal, 100.0, 50.0};  // 100 MHz: a cycle is 10 ns; a poll iteration 500 ns
  std::vector<std::pair<char, uint64_t>> ends;
  std::function<void()> mark(char what) {
    return [this, what] { ends.emplace_back(what, cal.now_ps()); };
  }
  void run() { sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS)); }
};

TEST(HostCpu, InterruptsQueueAndDelayTheUserWorkTheyLandOn) {
  Host h;
  EXPECT_EQ(h.cpu.cycles_ps(100), 1 * kUs);
  h.cpu.compute(100 * kUs, h.mark('u'));
  h.cal.at(10 * kUs, [&h] {
    h.cpu.interrupt(5 * kUs, h.mark('a'));
    h.cpu.interrupt(7 * kUs, h.mark('b'));  // waits for the first routine
  });
  h.run();
  ASSERT_EQ(h.ends.size(), 3u);
  EXPECT_EQ(h.ends[0], std::make_pair('a', 15 * kUs));
  EXPECT_EQ(h.ends[1], std::make_pair('b', 22 * kUs));
  EXPECT_EQ(h.ends[2], std::make_pair('u', 112 * kUs));  // 100 us of work plus 12 of routines
  EXPECT_EQ(h.cpu.busy_ps(), 12 * kUs);
}

TEST(HostCpu, LaterUserWorkPreemptsAndThePreemptedResumesWithWhatItStillNeeded) {
  Host h;
  h.cpu.compute(100 * kUs, h.mark('a'));
  h.cal.at(30 * kUs, [&h] { h.cpu.compute(20 * kUs, h.mark('b')); });
  h.run();
  ASSERT_EQ(h.ends.size(), 2u);
  EXPECT_EQ(h.ends[0], std::make_pair('b', 50 * kUs));
  EXPECT_EQ(h.ends[1], std::make_pair('a', 120 * kUs));
  EXPECT_EQ(h.cpu.busy_ps(), 0u);  // user work is not communication time
  h.cpu.charge(3 * kUs);
  EXPECT_EQ(h.cpu.busy_ps(), 3 * kUs);
}

TEST(HostCpu, APollLoopNoticesOneIterationAfterTheConditionIsChecked) {
  Host h;
  bool flag = false;
  h.cpu.poll([&flag] { return flag; }, h.mark('p'));
  h.cal.at(40 * kUs, [&] {
    flag = true;
    h.cpu.run_pollers(h.cal.now_ps());
  });
  h.cpu.poll([] { return true; }, h.mark('q'));  // already true: one iteration of user work
  h.run();
  ASSERT_EQ(h.ends.size(), 2u);
  EXPECT_EQ(h.ends[0], std::make_pair('q', kUs / 2));
  EXPECT_EQ(h.ends[1], std::make_pair('p', 40 * kUs + kUs / 2));
}

TEST(HostCpu, PowerLossEndsTheUserProgramAndItsPollers) {
  Host h;
  h.cpu.compute(100 * kUs, h.mark('u'));
  h.cpu.poll([] { return false; }, h.mark('p'));
  h.cal.at(10 * kUs, [&h] { h.cpu.power_off(); });
  h.cal.at(20 * kUs, [&h] { h.cpu.run_pollers(h.cal.now_ps()); });
  h.run();
  EXPECT_TRUE(h.ends.empty());
}

}  // namespace
