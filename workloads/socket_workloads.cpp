// rtt, oneway, peak and raytrace over the hosts' UDP/IP socket stacks (workload.over udp), measured as the
// thesis measured UDP10/UDP100 (6.2.3, 6.2.4): every message carried by MBCF/Ether's Go-back-N
// run as user-level routines over a UDP socket (models/sockets/reliable_udp.h), on the same
// hosts, NICs and wire as the MBCF workloads. Every message's bytes are checked where it
// arrives.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "models/core/error.h"
#include "models/sockets/reliable_udp.h"
#include "workloads/mbcf_points.h"
#include "workloads/mbcf_workloads.h"

namespace mbpsim {

using nlohmann::ordered_json;
using namespace mbpsim::mbcf_points;

namespace {

class SocketWorkload : public MbcfWorkload {
 public:
  static constexpr uint16_t kPort = 7000;  // every host's library's socket
  SocketWorkload(const Config& c, Stats& st, uint64_t seed) : MbcfWorkload(c, st, seed) {
    const sockets::SocketConfig sc = sockets::SocketConfig::from(c);
    const mbcf::gbn::Params gp = cfg_.gbn_params();
    for (uint32_t n = 0; n < cfg_.nodes; ++n)
      lib_.push_back(std::make_unique<sockets::ReliableUdp>(*cal_, *cluster_.inet[n], sys_->os(n), n, cfg_.nodes, kPort, gp,
                                                            sc.rudp_instr, st));
    // A message carries at most one datagram's data under the library's header.
    max_size_ = sc.udp_sendspace - sockets::ReliableUdp::kHeader;
  }
  ordered_json summary() const override {
    ordered_json s = MbcfWorkload::summary();
    s["over"] = "udp";
    return s;
  }
  std::string stalled() const override {
    for (uint32_t n = 0; n < cfg_.nodes; ++n)
      if (lib_[n]->first_error() != sockets::Errno::Ok && lib_[n]->first_error() != sockets::Errno::NoBufs)
        return "host " + std::to_string(n) + ": a socket call failed: " + to_string(lib_[n]->first_error());
    return MbcfWorkload::stalled();
  }

 protected:
  // The message's bytes as the sender made them; a mismatch stops the run (exit 2).
  void check(uint32_t at, const std::vector<uint8_t>& got, uint32_t n, uint32_t salt) {
    if (got != pattern(n, salt))
      sys_->fail("host " + std::to_string(at) + " received a " + std::to_string(got.size()) + "-byte message that is not the " +
                 std::to_string(n) + "-byte message sent");
  }
  std::vector<std::unique_ptr<sockets::ReliableUdp>> lib_;
  uint32_t max_size_ = 0;
};

// ------------------------------------------------------------------ rtt, oneway (6.2.4, 6.3.3)

// Ping-pong: host 0 sends a message, host 1 sends one of the same size back when it has it.
// rtt reports the round trip, oneway half of it (the thesis's one-way latencies of TCP1000 are
// half round trips), each with the clock's read.
class SocketPingPong : public SocketWorkload {
 public:
  SocketPingPong(const Config& c, Stats& st, uint64_t seed, bool oneway) : SocketWorkload(c, st, seed), oneway_(oneway) {
    commands(c, {}, {});  // the message is the transport's: no MBCF command by name
    sizes_ = sizes(c, 1, max_size_, "one UDP datagram under the library's header: sockets.udp_sendspace less 4");
    iters_ = static_cast<uint32_t>(c.get_int("workload.iterations"));
  }
  void start() override {
    serve();
    next_point();
  }

 private:
  // Host 1 echoes every message, forever (the run ends with host 0's last point).
  void serve() {
    lib_[1]->recv([this](uint32_t src, std::vector<uint8_t> d) {
      check(1, d, sizes_[si_], i_);
      lib_[1]->send(src, std::move(d), [this] { serve(); });
    });
  }
  void next_point() {
    if (si_ == sizes_.size()) return finish();
    i_ = 0;
    sum_ = 0;
    round();
  }
  void round() {
    if (i_ == 2) mark_cpu();
    const uint64_t t0 = now();
    const uint32_t n = sizes_[si_];
    lib_[0]->send(1, pattern(n, i_), [this, t0, n] {
      lib_[0]->recv([this, t0, n](uint32_t, std::vector<uint8_t> d) {
        check(0, d, n, i_);
        if (i_ >= 2) sum_ += static_cast<double>(now() - t0) + timer_read_ps();
        if (++i_ < iters_ + 2) return round();
        const double rtt = sum_ / iters_ / 1e6;
        points_.push_back(point("UDP", n, oneway_ ? rtt / 2 : rtt, "us", cpu_us_since_mark() / iters_ / (oneway_ ? 2 : 1)));
        ++si_;
        next_point();
      });
    });
  }
  const bool oneway_;
  std::vector<uint32_t> sizes_;
  uint32_t iters_, si_ = 0, i_ = 0;
  double sum_ = 0;
};

// ------------------------------------------------------------------ peak (6.2.3)

// Host 0 streams workload.transfers messages of each size to host 1 as fast as the window lets
// it; the rate is the data over the time from the first send to the last acknowledgement.
class SocketPeak : public SocketWorkload {
 public:
  SocketPeak(const Config& c, Stats& st, uint64_t seed) : SocketWorkload(c, st, seed) {
    commands(c, {}, {});
    sizes_ = sizes(c, 1, max_size_, "one UDP datagram under the library's header: sockets.udp_sendspace less 4");
    count_ = static_cast<uint32_t>(c.get_int("workload.transfers"));
  }
  void start() override {
    serve();
    next_point();
  }

 private:
  void serve() {
    lib_[1]->recv([this](uint32_t, std::vector<uint8_t> d) {
      check(1, d, sizes_[rsi_], rk_);
      if (++rk_ == count_) {
        rk_ = 0;
        ++rsi_;
      }
      serve();
    });
  }
  void next_point() {
    if (si_ == sizes_.size()) return finish();
    k_ = 0;
    mark_cpu();
    t0_ = now();
    step();
  }
  void step() {
    const uint32_t n = sizes_[si_];
    if (k_ == count_) {
      lib_[0]->flush([this, n] {
        const double s = (now() - t0_) / 1e12;
        points_.push_back(point("UDP", n, count_ * static_cast<double>(n) / s / 1e6, "MB/s", cpu_us_since_mark() / count_));
        ++si_;
        next_point();
      });
      return;
    }
    const uint32_t k = k_++;
    lib_[0]->send(1, pattern(n, k), [this] { step(); });
  }
  std::vector<uint32_t> sizes_;
  uint32_t count_, si_ = 0, k_ = 0, rsi_ = 0, rk_ = 0;
  uint64_t t0_ = 0;
};

// ------------------------------------------------------------------ raytrace (6.2.6)

// The parallel ray tracer of the MBCF workload (6.2.6) over UDP: calculator n computes every
// calc_nodes-th chunk of workload.payload_bytes pixels (and skips the others' pixels, as every
// node runs the whole loop) and sends it to the display, host 0, as a message: the chunk's
// offset (4 bytes, big-endian) and its pixels. The display's program takes each message from its
// socket and stores the pixels in its frame buffer. exec_time_s is when the display has every
// chunk; the frame is then checked pixel by pixel.
class SocketRaytrace : public SocketWorkload {
 public:
  SocketRaytrace(const Config& c, Stats& st, uint64_t seed) : SocketWorkload(c, st, seed) {
    commands(c, {}, {});
    calc_ = static_cast<uint32_t>(c.get_int("workload.calc_nodes"));
    if (calc_ + 1 > cfg_.nodes)
      c.fail("workload.calc_nodes", std::to_string(calc_) + " calculators and a display need mbcf.nodes >= " + std::to_string(calc_ + 1));
    chunk_ = static_cast<uint32_t>(c.get_int("workload.payload_bytes"));
    w_ = static_cast<uint32_t>(c.get_int("workload.width"));
    h_ = static_cast<uint32_t>(c.get_int("workload.height"));
    pixel_ps_ = static_cast<uint64_t>(c.get_double("workload.pixel_us") * 1e6);
    skip_ps_ = sys_->cycles_ps(c.get_double("workload.skip_cycles"));
    chunks_ = (w_ * h_ + chunk_ - 1) / chunk_;
    frame_.assign(w_ * h_, 0);
  }
  void start() override {
    display();
    for (uint32_t n = 1; n <= calc_; ++n) work(n, n - 1);
  }
  ordered_json summary() const override {
    ordered_json s;
    s["finished"] = done_;
    s["exec_time_s"] = std::round(exec_ps_ / 1e9) / 1e3;
    s["calc_nodes"] = calc_;
    s["payload_bytes"] = chunk_;
    s["packets"] = chunks_;
    s["frame_correct"] = frame_ok_;
    s["over"] = "udp";
    return s;
  }

 private:
  static uint8_t pixel(uint32_t i) { return static_cast<uint8_t>((i * 2654435761u) >> 24); }
  void display() {
    lib_[0]->recv([this](uint32_t, std::vector<uint8_t> m) {
      if (m.size() < 4) return sys_->fail("the display received a message without its chunk's offset");
      const uint32_t first = static_cast<uint32_t>(m[0]) << 24 | static_cast<uint32_t>(m[1]) << 16 | static_cast<uint32_t>(m[2]) << 8 | m[3];
      const uint32_t len = static_cast<uint32_t>(m.size() - 4);
      if (first + len > frame_.size()) return sys_->fail("the display received a chunk outside its frame");
      std::copy(m.begin() + 4, m.end(), frame_.begin() + first);
      if (++received_ < chunks_) return display();
      exec_ps_ = now();
      frame_ok_ = true;
      for (uint32_t i = 0; i < frame_.size(); ++i) frame_ok_ &= frame_[i] == pixel(i);
      finish();
    });
  }
  void work(uint32_t n, uint32_t k) {
    if (k >= chunks_) return;
    const uint32_t first = k * chunk_, len = std::min(chunk_, w_ * h_ - first);
    const uint32_t skipped = k + calc_ < chunks_ ? (calc_ - 1) * chunk_ : 0;
    sys_->compute(n, static_cast<uint64_t>(len) * pixel_ps_ + skipped * skip_ps_, [this, n, k, first, len] {
      std::vector<uint8_t> m(4 + len);
      for (int b = 0; b < 4; ++b) m[b] = static_cast<uint8_t>(first >> (24 - 8 * b));
      for (uint32_t i = 0; i < len; ++i) m[4 + i] = pixel(first + i);
      lib_[n]->send(0, std::move(m), [this, n, k] { work(n, k + calc_); });
    });
  }
  uint32_t calc_, chunk_, w_, h_, chunks_, received_ = 0;
  uint64_t pixel_ps_, skip_ps_, exec_ps_ = 0;
  std::vector<uint8_t> frame_;
  bool frame_ok_ = false;
};

}  // namespace

std::unique_ptr<Workload> make_socket_workload(const std::string& kind, const Config& c, Stats& stats, uint64_t seed) {
  if (kind == "raytrace") return std::make_unique<SocketRaytrace>(c, stats, seed);
  if (c.get_int("mbcf.nodes") != 2) c.fail("mbcf.nodes", "rtt, oneway and peak over sockets run between 2 hosts");
  if (kind == "rtt") return std::make_unique<SocketPingPong>(c, stats, seed, false);
  if (kind == "oneway") return std::make_unique<SocketPingPong>(c, stats, seed, true);
  if (kind == "peak") return std::make_unique<SocketPeak>(c, stats, seed);
  c.fail("workload.over", "workload.kind " + kind + " runs over mbcf only (udp carries rtt, oneway, peak and raytrace)");
}

}  // namespace mbpsim
