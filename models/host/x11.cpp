// The X Window System's cost at a conventional host (x11.h).
#include "models/host/x11.h"

#include <algorithm>
#include <utility>

#include "models/core/module_tree.h"

namespace mbpsim::host {

const ParamTable<X11Config>& X11Config::params() {
  static const ParamTable<X11Config> t = ParamTable<X11Config>()
      .add(&X11Config::putimage_instr, {"x11.putimage_instr", 250.0, "instructions",
         "Xlib's XPutImage of one row of an 8-bit ZPixmap into its output buffer (X11R6 PutImage.c): the call's clipping to the image and its search of the display's pixmap formats, FlushGC, PutSubImage's size checks, GetReq's room check and the request's nine fields, SendZImage's lengths and its NoSwap copy's set-up (a chunk's row is not the image's whole line); an estimate from the code's structure (the pixels' copy at host.copy_mb_s)", 0, 1e9})
      .add(&X11Config::request_instr, {"x11.request_instr", 600.0, "instructions",
         "the X server's execution of one such PutImage request (the X11R6 sample server, cfb on an 8-bit frame buffer): the dispatcher's loop and ReadRequestFromClient on a request already read (dix/dispatch.c, os/io.c), ProcPutImage's checks with the drawable and GC cached from the request before, cfbPutImage's scratch pixmap header, the GC's CopyArea (cfbBitBlt: a pixmap source clipped against the window's one-rectangle clip, its region and point list) and cfbDoBitbltCopy's set-up and its one row; an estimate from the code's structure (the pixels' copy at host.copy_mb_s)", 0, 1e9})
      .add(&X11Config::buffer_bytes, {"x11.buffer_bytes", 2048, "bytes",
         "Xlib's output buffer: a request that does not fit sends what it holds to the server (X11R6 Xlibint.h, BUFSIZE 2048)", 32, 1 << 24});
  return t;
}

X11Config::X11Config() { params().set_defaults(*this); }

X11Config X11Config::from(const Config& c) {
  X11Config x;
  params().load(x, c);
  return x;
}

void declare_x11_params(ParamSchema& s) { X11Config::params().declare(s); }

namespace {
// The counters' owner: the host the OS runs (`system.host<n>`), or the OS itself outside a host.
const sc_core::sc_object& host_of(const Os& os) {
  const sc_core::sc_object* p = os.get_parent_object();
  return p ? *p : os;
}
}  // namespace

X11Display::X11Display(Os& os, const X11Config& c, double sosend_instr, double soreceive_instr, uint32_t width,
                       uint32_t height, Stats& st)
    : os_(os),
      c_(c),
      sosend_instr_(sosend_instr),
      soreceive_instr_(soreceive_instr),
      width_(width),
      screen_(static_cast<size_t>(width) * height, 0),
      put_images_(st.counter(stat_name(host_of(os), "x11.put_images"), "XPutImage calls of the display program")),
      flushes_(st.counter(stat_name(host_of(os), "x11.flushes"), "Xlib's output buffer sent to the X server (one writev each)")),
      requests_(st.counter(stat_name(host_of(os), "x11.requests"), "PutImage requests the X server executed")),
      bytes_(st.counter(stat_name(host_of(os), "x11.bytes"), "bytes of requests sent to the X server", "bytes")),
      client_ps_(st.counter(stat_name(host_of(os), "x11.client_ps"), "host CPU time in Xlib's XPutImage (its writev is the OS's and the socket layer's)", "ps")),
      server_ps_(st.counter(stat_name(host_of(os), "x11.server_ps"),
                            "host CPU time of the X server: its requests, and its read, select and socket-layer work; with the context switches to it and back", "ps")) {}

void X11Display::put_image(uint32_t first, std::vector<uint8_t> pixels, std::function<void()> k) {
  if (pixels.empty() || first % width_ + pixels.size() > width_ || first + pixels.size() > screen_.size())
    internal_error("X11Display::put_image: a row of " + std::to_string(pixels.size()) + " pixels at " + std::to_string(first) +
                   " is not inside one row of the window");
  put_images_.inc();
  const uint64_t ps = os_.instr_ps(c_.putimage_instr) + os_.copy_ps(pixels.size());
  client_ps_.inc(ps);
  os_.user(ps, [this, first, pixels = std::move(pixels), k = std::move(k)]() mutable {
    // GetReq: the request's fixed part must fit, or the buffer goes first.
    auto place = [this, first, pixels = std::move(pixels), k = std::move(k)]() mutable {
      const uint32_t data = request_bytes(pixels.size()) - kRequestHeader;
      pending_bytes_ += kRequestHeader;
      pending_.push_back({first, std::move(pixels)});
      if (pending_bytes_ + data <= c_.buffer_bytes) {
        pending_bytes_ += data;
        return k();
      }
      // SendZImage's data does not fit: _XSend writes the buffer and the data together.
      pending_bytes_ += data;
      flush(std::move(k));
    };
    if (pending_bytes_ + kRequestHeader > c_.buffer_bytes) return flush(std::move(place));
    place();
  });
}

void X11Display::flush(std::function<void()> k) {
  if (pending_.empty()) return k();
  std::vector<Request> batch = std::move(pending_);
  pending_.clear();
  const uint64_t bytes = pending_bytes_;
  pending_bytes_ = 0;
  flushes_.inc();
  bytes_.inc(bytes);
  // writev on the Unix-domain socket: the socket layer appends the bytes to the server's
  // receive buffer and sorwakeup wakes the server, which runs before the call returns.
  os_.syscall(
      "writev",
      [this, batch = std::move(batch), bytes](std::function<void()> done) mutable {
        os_.kernel(os_.instr_ps(sosend_instr_) + os_.copy_ps(bytes),
                   [this, batch = std::move(batch), bytes, done = std::move(done)]() mutable { serve(std::move(batch), bytes, std::move(done)); });
      },
      std::move(k));
}

void X11Display::serve(std::vector<Request> batch, uint64_t bytes, std::function<void()> k) {
  const OsConfig& oc = os_.config();
  // The switch to the server and, once it sleeps in select() again, back to the client; its
  // select()'s return and its next call, and its read() of the batch (each a whole system call).
  const uint64_t switches = 2 * os_.instr_ps(oc.switch_instr);
  const uint64_t calls = 2 * os_.instr_ps(oc.syscall_instr) + os_.instr_ps(oc.select_instr) + os_.instr_ps(soreceive_instr_) + os_.copy_ps(bytes);
  uint64_t work = 0;
  for (const Request& r : batch) work += os_.instr_ps(c_.request_instr) + os_.copy_ps(r.pixels.size());
  const uint64_t ps = switches + calls + work;
  server_ps_.inc(ps);
  requests_.inc(batch.size());
  os_.user(ps, [this, batch = std::move(batch), k = std::move(k)] {
    for (const Request& r : batch) std::copy(r.pixels.begin(), r.pixels.end(), screen_.begin() + r.first);
    k();
  });
}

}  // namespace mbpsim::host
