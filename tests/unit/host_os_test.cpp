// The host OS's costs alone (models/host/os.h): a light-weight call is its trap and then the
// copy of what the kernel found, both on the host CPU and preempting user work as any
// user-started work does; an invocation is its upcalls; each is counted under the OS's name.
#include <gtest/gtest.h>

#include <vector>

#include "models/core/calendar.h"
#include "models/core/stats.h"
#include "models/host/cpu.h"
#include "models/host/os.h"
#include "tests/test_util.h"

namespace {

using namespace mbpsim;

constexpr uint64_t kOsUsPs = 1000000;  // ps

struct OsRig {
  Calendar cal{"cal"};
  Stats st;
  host::Cpu cpu{"cpu", cal, 100.0, 50.0};  // 100 MHz: a cycle is 10 ns
  host::OsConfig c = [] {
    host::OsConfig o;
    o.lw_syscall_cycles = 200;  // 2 us
    o.invoke_cycles = 500;      // 5 us
    o.copy_mb_s = 100;          // 10 ns a byte
    o.int_entry_cycles = 80;
    o.cold_line_ns = 250;
    o.line_bytes = 32;
    return o;
  }();
  host::Os os{"os", cpu, c, st};
  std::vector<std::pair<char, uint64_t>> ends;
  std::function<void()> mark(char what) {
    return [this, what] { ends.emplace_back(what, cal.now_ps()); };
  }
  void run() { sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS)); }
  double stat(const std::string& leaf) { return test::stat_value(st, "os." + leaf); }
};

TEST(HostOs, ALightWeightCallIsItsTrapThenTheCopyOfWhatTheKernelFound) {
  OsRig h;
  EXPECT_EQ(h.os.interrupt_entry_ps(), 800000u);
  EXPECT_EQ(h.os.copy_ps(1000), 10 * kOsUsPs);
  uint64_t kernel_at = 0;
  h.os.lw_enter([&] {
    kernel_at = h.cal.now_ps();
    h.os.lw_leave(300, host::Os::Data::Warm, h.mark('a'));  // the kernel found a 300-byte entry
  });
  h.run();
  EXPECT_EQ(kernel_at, 2 * kOsUsPs);
  ASSERT_EQ(h.ends.size(), 1u);
  EXPECT_EQ(h.ends[0], std::make_pair('a', 5 * kOsUsPs));
  EXPECT_EQ(h.stat("lw_syscalls"), 1);
  EXPECT_EQ(h.stat("lw_syscall_ps"), 5.0 * kOsUsPs);
  EXPECT_EQ(h.stat("lw_copy_bytes"), 300);
  EXPECT_EQ(h.os.spent().lw_trap_ps, 2 * kOsUsPs);
  EXPECT_EQ(h.os.spent().lw_copy_ps, 3 * kOsUsPs);
}

TEST(HostOs, ACallThatFindsNothingCopiesNothingAndTheUserWorkItPreemptsResumes) {
  OsRig h;
  h.cpu.compute(10 * kOsUsPs, h.mark('u'));
  h.cal.at(4 * kOsUsPs, [&h] { h.os.lw_enter([&h] { h.os.lw_leave(0, host::Os::Data::Warm, h.mark('a')); }); });
  h.run();
  ASSERT_EQ(h.ends.size(), 2u);
  EXPECT_EQ(h.ends[0], std::make_pair('a', 6 * kOsUsPs));
  EXPECT_EQ(h.ends[1], std::make_pair('u', 12 * kOsUsPs));  // 10 us of work plus the 2 us call
  EXPECT_EQ(h.stat("lw_copy_bytes"), 0);
  EXPECT_EQ(h.os.spent().lw_copy_ps, 0u);
}

// A copy over data no cache holds (a frame or an entry a NIC's DMA wrote) also stalls on every
// line it touches first: a cold 1,000-byte copy is the warm one plus 32 lines of 250 ns; lines a
// buffer's first bytes share with headers read before are not counted again; a light-weight
// call whose entry the MBP2's ADMA wrote copies it cold.
TEST(HostOs, AColdCopyIsTheWarmOnePlusAStallPerLineTouchedFirst) {
  OsRig h;
  EXPECT_EQ(h.os.copy_ps(1000, host::Os::Data::Warm), 10 * kOsUsPs);
  EXPECT_EQ(h.os.copy_ps(1000, host::Os::Data::Cold), 10 * kOsUsPs + 32 * 250000);
  EXPECT_EQ(h.stat("cold_lines"), 32);
  // a 1,070-byte frame whose first 34 bytes (2 lines) were read: 32 lines left
  EXPECT_EQ(h.os.first_touch_ps(1070, 34), 32u * 250000);
  EXPECT_EQ(h.os.first_touch_ps(34, 34), 0u);
  EXPECT_EQ(h.stat("cold_lines"), 64);
  EXPECT_EQ(h.stat("cold_ps"), 64.0 * 250000);
  h.os.lw_enter([&] { h.os.lw_leave(300, host::Os::Data::Cold, h.mark('a')); });
  h.run();
  ASSERT_EQ(h.ends.size(), 1u);
  EXPECT_EQ(h.ends[0], std::make_pair('a', 2 * kOsUsPs + 3 * kOsUsPs + 10 * 250000));  // trap, copy, 10 lines
  EXPECT_EQ(h.os.spent().lw_copy_ps, 3 * kOsUsPs + 10 * 250000);
}

TEST(HostOs, AnInvocationIsItsUpcallsAndInterruptsStillDelayIt) {
  OsRig h;
  h.os.invoke(2, h.mark('p'));  // through the user-level scheduler: two upcalls
  h.cal.at(3 * kOsUsPs, [&h] { h.cpu.interrupt(1 * kOsUsPs, h.mark('i')); });
  h.run();
  ASSERT_EQ(h.ends.size(), 2u);
  EXPECT_EQ(h.ends[0], std::make_pair('i', 4 * kOsUsPs));
  EXPECT_EQ(h.ends[1], std::make_pair('p', 11 * kOsUsPs));
  EXPECT_EQ(h.stat("invocations"), 2);
  EXPECT_EQ(h.stat("invoke_ps"), 10.0 * kOsUsPs);
  EXPECT_EQ(h.os.spent().invocations, 2u);
}

}  // namespace
