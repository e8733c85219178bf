// The X Window System at a conventional host, as its cost to the host's CPU (6.2.6: "The X11R6
// window system was used at the displaying node without 'XFlush' so as not to impose additional
// overheads"). The display program of the ray tracer over UDP or TCP shows each chunk it
// receives with one XPutImage of a row of 8-bit pixels:
//   - Xlib (the client's library) builds a PutImage request (24 bytes and the pixels padded to
//     a word) in its output buffer (`x11.putimage_instr`, the pixels copied at the host's copy
//     rate). Without XFlush the buffer goes to the server only when the next request does not
//     fit (`x11.buffer_bytes`), as one writev() on the connection's Unix-domain socket;
//   - that write wakes the X server, asleep in select(). It preempts the client (a process
//     woken from a sleep has the higher priority under SunOS's scheduler), reads the batch,
//     executes each request (`x11.request_instr`: the dispatcher, ProcPutImage, cfbPutImage and
//     the blit of one row into the frame buffer, the pixels copied), calls select() again and
//     sleeps; the client goes on. The socket layer's work is the stack's (`sockets.sosend_instr`,
//     `sockets.soreceive_instr`: the same socket code), each system call and context switch the
//     OS's (`host.syscall_instr`, `host.switch_instr`, `host.select_instr`), at the host's
//     `host.kernel_cpi` as every path of the conventional host's software in this model.
// The server holds the window's pixels: what the display shows is what reached the server, and
// a run checks that (`screen()`), not only what the program received.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/core/params.h"
#include "models/core/stats.h"
#include "models/host/os.h"

namespace mbpsim::host {

struct X11Config {
  // Every member is a parameter of `params()`, which gives it its default.
  X11Config();
  double putimage_instr{};  // Xlib's XPutImage of one row, into the output buffer
  double request_instr{};   // the X server's execution of one such PutImage request
  uint32_t buffer_bytes{};  // Xlib's output buffer
  static const ParamTable<X11Config>& params();
  static X11Config from(const Config& c);
};
void declare_x11_params(ParamSchema& s);

// One program's connection to the X server of its host, and that server, drawing into a window
// of `width` x `height` 8-bit pixels. Counters under the host's name (`<host>.x11.*`).
class X11Display {
 public:
  // PutImage's fixed part: the request's 24 bytes (X11 protocol, xPutImageReq).
  static constexpr uint32_t kRequestHeader = 24;
  // `sosend_instr`, `soreceive_instr`: the socket layer's per-call work (sockets.*).
  X11Display(Os& os, const X11Config& c, double sosend_instr, double soreceive_instr, uint32_t width, uint32_t height,
             Stats& st);
  // XPutImage of `pixels` (one row, at pixel `first` of the window in raster order); `k` when
  // the call returns (after a flush of the buffer first, when the request does not fit).
  void put_image(uint32_t first, std::vector<uint8_t> pixels, std::function<void()> k);
  // XFlush (as XCloseDisplay does at the program's end): the buffer to the server; `k` when the
  // server has executed it.
  void flush(std::function<void()> k);
  // The window's pixels as the server drew them (0 where nothing was drawn).
  const std::vector<uint8_t>& screen() const { return screen_; }
  uint32_t buffered_requests() const { return static_cast<uint32_t>(pending_.size()); }

 private:
  struct Request {
    uint32_t first;
    std::vector<uint8_t> pixels;
  };
  static uint32_t request_bytes(size_t pixels) { return kRequestHeader + static_cast<uint32_t>((pixels + 3) / 4 * 4); }
  // The server's turn, inside the client's writev: it wakes, reads `bytes`, executes the
  // batch, sleeps in select() again; then `k`.
  void serve(std::vector<Request> batch, uint64_t bytes, std::function<void()> k);

  Os& os_;
  const X11Config c_;
  const double sosend_instr_, soreceive_instr_;
  const uint32_t width_;
  std::vector<uint8_t> screen_;
  std::vector<Request> pending_;  // in Xlib's buffer
  uint64_t pending_bytes_ = 0;
  Counter &put_images_, &flushes_, &requests_, &bytes_, &client_ps_, &server_ps_;
};

}  // namespace mbpsim::host
