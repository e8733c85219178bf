// The X Window System's cost at a host (models/host/x11.h): Xlib holds PutImage requests in its
// output buffer and sends them only when the next one does not fit (or at XFlush); the X server
// then runs on the same CPU, inside the client's writev, and only then does the window show
// the pixels. Each cost is the parameter's, to the picosecond.
#include <gtest/gtest.h>

#include <vector>

#include "models/core/calendar.h"
#include "models/core/stats.h"
#include "models/host/cpu.h"
#include "models/host/os.h"
#include "models/host/x11.h"
#include "tests/test_util.h"

namespace {

using namespace mbpsim;

constexpr uint64_t kNs = 1000;  // ps

struct X11Rig {
  Calendar cal{"cal"};
  Stats st;
  host::Cpu cpu{"cpu", cal, 100.0, 50.0};  // 100 MHz: a cycle is 10 ns
  host::OsConfig c = [] {
    host::OsConfig o;
    o.kernel_cpi = 1;      // an instruction is a cycle
    o.copy_mb_s = 100;     // 10 ns a byte
    o.syscall_instr = 50;  // 500 ns
    o.switch_instr = 100;  // 1 us
    o.select_instr = 30;   // 300 ns
    return o;
  }();
  host::Os os{"os", cpu, c, st};
  host::X11Config xc = [] {
    host::X11Config x;
    x.putimage_instr = 100;  // 1 us
    x.request_instr = 200;   // 2 us
    x.buffer_bytes = 2048;
    return x;
  }();
  static constexpr double kSosend = 40, kSoreceive = 60;  // 400 and 600 ns
  host::X11Display x{os, xc, kSosend, kSoreceive, 4096, 4, st};
  void run() { sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_SEC)); }
  double stat(const std::string& leaf) { return test::stat_value(st, "os.x11." + leaf); }
  // What the server's turn costs for a batch of `n` one-row requests of `pixels` each, `bytes` in all.
  static uint64_t serve_ps(uint64_t n, uint64_t pixels, uint64_t bytes) {
    const uint64_t switches = 2 * 1000 * kNs, calls = 2 * 500 * kNs + 300 * kNs + 600 * kNs + bytes * 10 * kNs;
    return switches + calls + n * (2000 * kNs + pixels * 10 * kNs);
  }
  // A writev of `bytes`: the call's entry and exit, the socket layer's append and copy.
  static uint64_t writev_ps(uint64_t bytes) { return 500 * kNs + 400 * kNs + bytes * 10 * kNs; }
};

// One-pixel requests are 28 bytes (24 and the pixel padded to a word): 73 fit in 2,048 bytes
// (2,044), and the 74th's fixed part does not, so GetReq sends the 73 first.
TEST(HostX11, XlibSendsItsBufferOnlyWhenTheNextRequestDoesNotFit) {
  X11Rig h;
  uint64_t after73 = 0, after74 = 0;
  std::function<void(uint32_t)> put = [&](uint32_t i) {
    if (i == 73) after73 = h.cal.now_ps();
    if (i == 74) return void(after74 = h.cal.now_ps());
    h.x.put_image(i, {static_cast<uint8_t>(i + 1)}, [&put, i] { put(i + 1); });
  };
  put(0);
  h.run();
  const uint64_t call = 1000 * kNs + 10 * kNs;  // XPutImage and its pixel's copy
  EXPECT_EQ(after73, 73 * call);
  EXPECT_EQ(after74 - after73, call + X11Rig::writev_ps(2044) + X11Rig::serve_ps(73, 1, 2044));
  EXPECT_EQ(h.stat("put_images"), 74);
  EXPECT_EQ(h.stat("flushes"), 1);
  EXPECT_EQ(h.stat("requests"), 73);
  EXPECT_EQ(h.stat("bytes"), 2044);
  EXPECT_EQ(h.stat("client_ps"), 74.0 * call);
  EXPECT_EQ(h.stat("server_ps"), static_cast<double>(X11Rig::serve_ps(73, 1, 2044)));
  EXPECT_EQ(h.x.buffered_requests(), 1u);
  // the window shows the 73 the server executed, not the one still in Xlib's buffer
  for (uint32_t i = 0; i < 73; ++i) EXPECT_EQ(h.x.screen()[i], i + 1) << i;
  EXPECT_EQ(h.x.screen()[73], 0);
  // the writev is a system call of the OS's; the server's calls are the X server's time
  EXPECT_EQ(test::stat_value(h.st, "os.syscalls"), 1);
}

// SendZImage: a request whose fixed part fits but whose pixels do not goes out with the buffer
// in the same write (_XSend), which leaves the buffer empty.
TEST(HostX11, ARequestWhosePixelsDoNotFitGoesWithTheBuffer) {
  X11Rig h;
  bool done = false;
  h.x.put_image(0, {7}, [&] {
    h.x.put_image(100, std::vector<uint8_t>(2020, 9), [&] { done = true; });
  });
  h.run();
  ASSERT_TRUE(done);
  EXPECT_EQ(h.stat("flushes"), 1);
  EXPECT_EQ(h.stat("requests"), 2);
  EXPECT_EQ(h.stat("bytes"), 28 + 24 + 2020);
  EXPECT_EQ(h.x.buffered_requests(), 0u);
  EXPECT_EQ(h.x.screen()[0], 7);
  EXPECT_EQ(h.x.screen()[100], 9);
  EXPECT_EQ(h.x.screen()[2119], 9);
  EXPECT_EQ(h.x.screen()[2120], 0);
}

// XFlush sends what the buffer holds; with nothing in it, nothing is written.
TEST(HostX11, FlushSendsWhatIsLeftAndAnEmptyBufferNothing) {
  X11Rig h;
  uint64_t flushed = 0, again = 0;
  h.x.put_image(4096 + 5, {1, 2, 3, 4, 5}, [&] {
    h.x.flush([&] {
      flushed = h.cal.now_ps();
      h.x.flush([&] { again = h.cal.now_ps(); });
    });
  });
  h.run();
  const uint64_t call = 1000 * kNs + 5 * 10 * kNs;
  EXPECT_EQ(flushed, call + X11Rig::writev_ps(32) + X11Rig::serve_ps(1, 5, 32));  // 24 + 8 bytes
  EXPECT_EQ(again, flushed);
  EXPECT_EQ(h.stat("flushes"), 1);
  EXPECT_EQ(h.x.screen()[4096 + 4], 0);
  for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(h.x.screen()[4096 + 5 + i], i + 1);
}

}  // namespace
