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

#include "models/core/bytes.h"
#include "models/core/error.h"
#include "models/core/rng.h"
#include "models/host/x11.h"
#include "models/sockets/reliable_udp.h"
#include "workloads/mbcf_points.h"
#include "workloads/mbcf_workloads.h"
#include "workloads/raytrace_scene.h"

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

// The client side of a ping-pong over a socket transport, one definition for UDP and TCP: for
// each size, workload.iterations + 2 rounds (the first two unmeasured), a round being host 0's
// message and the reply; rtt reports the mean round trip, oneway half of it (the thesis's
// one-way latencies of TCP1000 are half round trips), each with the clock's read. `Base` gives
// the transport: `exchange(n, salt, k)` sends host 0's message and gives `k` the reply.
template <class Base>
class PingPongClient : public Base {
 public:
  PingPongClient(const Config& c, Stats& st, uint64_t seed, bool oneway, const char* label)
      : Base(c, st, seed), oneway_(oneway), label_(label) {
    iters_ = static_cast<uint32_t>(c.get_int("workload.iterations"));
  }

 protected:
  virtual void exchange(uint32_t n, uint32_t salt, std::function<void(std::vector<uint8_t>)> k) = 0;
  size_t planned_points() const override { return sizes_.size(); }
  double point_share() const override { return static_cast<double>(i_) / (iters_ + 2); }
  void next_point() {
    if (si_ == sizes_.size()) return this->finish();
    i_ = 0;
    sum_ = 0;
    round();
  }
  std::vector<uint32_t> sizes_;
  uint32_t iters_ = 0, si_ = 0, i_ = 0;

 private:
  void round() {
    if (i_ == 2) this->mark_cpu();
    const uint64_t t0 = this->now();
    const uint32_t n = sizes_[si_];
    exchange(n, i_, [this, t0, n](std::vector<uint8_t> d) {
      this->check(0, d, n, i_);
      if (i_ >= 2) sum_ += static_cast<double>(this->now() - t0) + this->timer_read_ps();
      if (++i_ < iters_ + 2) return round();
      const double rtt = sum_ / iters_ / 1e6;
      this->points_.push_back(point(label_, n, oneway_ ? rtt / 2 : rtt, "us", this->cpu_us_since_mark() / iters_ / (oneway_ ? 2 : 1)));
      ++si_;
      next_point();
    });
  }
  const bool oneway_;
  const char* const label_;
  double sum_ = 0;
};

// Ping-pong over UDP: host 1's library echoes every message, forever (the run ends with host
// 0's last point).
class SocketPingPong : public PingPongClient<SocketWorkload> {
 public:
  SocketPingPong(const Config& c, Stats& st, uint64_t seed, bool oneway) : PingPongClient(c, st, seed, oneway, "UDP") {
    commands(c, {}, {});  // the message is the transport's: no MBCF command by name
    sizes_ = sizes(c, 1, max_size_, "one UDP datagram under the library's header: sockets.udp_sendspace less 4");
  }
  void start() override {
    serve();
    next_point();
  }

 private:
  void serve() {
    lib_[1]->recv([this](uint32_t src, std::vector<uint8_t> d) {
      check(1, d, sizes_[si_], i_);
      lib_[1]->send(src, std::move(d), [this] { serve(); });
    });
  }
  void exchange(uint32_t n, uint32_t salt, std::function<void(std::vector<uint8_t>)> k) override {
    lib_[0]->send(1, pattern(n, salt), [this, k = std::move(k)]() mutable {
      lib_[0]->recv([k = std::move(k)](uint32_t, std::vector<uint8_t> d) { k(std::move(d)); });
    });
  }
};

// ------------------------------------------------------------------ peak (6.2.3)

// The MBCF peak method (6.2.3) over the library: host 0 streams workload.transfers messages of
// each size to host 1, and every workload.ack_every-th message asks for a status, which host 1's
// program sends back as a message of its own (4 bytes: the group's number) when it has that
// message; before a new group host 0 reads the status of the group before last (one group in
// flight while the previous one is being acknowledged), and the last group's status closes the
// measurement.
class SocketPeak : public SocketWorkload {
 public:
  SocketPeak(const Config& c, Stats& st, uint64_t seed) : SocketWorkload(c, st, seed) {
    commands(c, {}, {});
    sizes_ = sizes(c, 1, max_size_, "one UDP datagram under the library's header: sockets.udp_sendspace less 4");
    count_ = static_cast<uint32_t>(c.get_int("workload.transfers"));
    every_ = status_every(c, count_);
  }
  void start() override {
    serve();
    next_point();
  }

 protected:
  size_t planned_points() const override { return sizes_.size(); }
  double point_share() const override { return static_cast<double>(k_) / count_; }

 private:
  static std::vector<uint8_t> status(uint32_t group) {
    std::vector<uint8_t> s(4);
    store_be32(s.data(), group);
    return s;
  }
  void serve() {
    lib_[1]->recv([this](uint32_t, std::vector<uint8_t> d) {
      check(1, d, sizes_[rsi_], rk_);
      const uint32_t k = rk_;
      if (++rk_ == count_) {
        rk_ = 0;
        ++rsi_;
      }
      if (k % every_ != every_ - 1) return serve();
      lib_[1]->send(0, status(k / every_), [this] { serve(); });  // the status the message asked for
    });
  }
  void next_point() {
    if (si_ == sizes_.size()) return finish();
    k_ = 0;
    statuses_ = 0;
    mark_cpu();
    t0_ = now();
    step();
  }
  // Host 0 reads statuses until it has `groups` of this point's; then `k`.
  void await_statuses(uint32_t groups, std::function<void()> k) {
    if (statuses_ >= groups) return k();
    lib_[0]->recv([this, groups, k = std::move(k)](uint32_t, std::vector<uint8_t> d) mutable {
      if (d != status(statuses_)) return sys_->fail("host 0 received a status that is not the next group's");
      ++statuses_;
      await_statuses(groups, std::move(k));
    });
  }
  void step() {
    const uint32_t n = sizes_[si_];
    if (k_ == count_) {  // the last group's status closes the measurement
      await_statuses(count_ / every_, [this, n] {
        const double s = (now() - t0_) / 1e12;
        points_.push_back(point("UDP", n, count_ * static_cast<double>(n) / s / 1e6, "MB/s", cpu_us_since_mark() / count_));
        ++si_;
        next_point();
      });
      return;
    }
    const uint32_t group = k_ / every_;
    if (k_ % every_ == 0 && group >= 2 && statuses_ < group - 1) return await_statuses(group - 1, [this] { step(); });
    const uint32_t k = k_++;
    lib_[0]->send(1, pattern(n, k), [this] { step(); });
  }
  std::vector<uint32_t> sizes_;
  uint32_t count_, every_, si_ = 0, k_ = 0, rsi_ = 0, rk_ = 0, statuses_ = 0;
  uint64_t t0_ = 0;
};

// ------------------------------------------------------------------ raytrace (6.2.6)

// How the ray tracer's display program over sockets shows what it receives (workload.display):
// with x11 (the default, 6.2.6's X11R6 "without 'XFlush'"), one XPutImage per row piece of each
// chunk through the X server of the display's host (models/host/x11.h); with memory, the pixels
// only stored in the program's memory. What the run checks is what the screen shows: the X
// server's window after the program's last request has reached it (XCloseDisplay's flush).
class RayDisplay {
 public:
  RayDisplay(const Config& c, const RayScene& sc, host::Os& os, Stats& st) : sc_(sc), frame_(sc.bytes(), 0) {
    if (c.get_string("workload.display") == "memory") return;
    const sockets::SocketConfig so = sockets::SocketConfig::from(c);
    x11_ = std::make_unique<host::X11Display>(os, host::X11Config::from(c), so.sosend_instr, so.soreceive_instr, sc.w, sc.h, st);
  }
  // The program shows the chunk's `pixels` at `first`; `k` when it goes on.
  void show(uint32_t first, std::vector<uint8_t> pixels, std::function<void()> k) {
    if (!x11_) {
      std::copy(pixels.begin(), pixels.end(), frame_.begin() + first);
      return k();
    }
    put_rows(first, std::move(pixels), 0, std::move(k));
  }
  const char* name() const { return x11_ ? "x11" : "memory"; }
  // The program's end: what Xlib still holds goes to the server; then `k(the frame is right)`.
  void close(std::function<void(bool)> k) {
    if (!x11_) return k(sc_.correct(frame_));
    x11_->flush([this, k = std::move(k)] { k(sc_.correct(x11_->screen())); });
  }

 private:
  // One XPutImage per row the chunk covers, from its byte `at` on.
  void put_rows(uint32_t first, std::vector<uint8_t> pixels, size_t at, std::function<void()> k) {
    if (at == pixels.size()) return k();
    const uint32_t pos = first + static_cast<uint32_t>(at);
    const size_t n = std::min<size_t>(pixels.size() - at, sc_.w - pos % sc_.w);
    if (at == 0 && n == pixels.size()) return x11_->put_image(pos, std::move(pixels), std::move(k));  // one row: as it is
    std::vector<uint8_t> row(pixels.begin() + static_cast<long>(at), pixels.begin() + static_cast<long>(at + n));
    x11_->put_image(pos, std::move(row), [this, first, pixels = std::move(pixels), at, n, k = std::move(k)]() mutable {
      put_rows(first, std::move(pixels), at + n, std::move(k));
    });
  }
  const RayScene& sc_;
  std::vector<uint8_t> frame_;  // (memory)
  std::unique_ptr<host::X11Display> x11_;
};

// The parallel ray tracer of the MBCF workload (6.2.6) over UDP: calculator n computes every
// calc_nodes-th chunk of workload.payload_bytes pixels (and skips the others' pixels, as every
// node runs the whole loop) and sends it to the display, host 0, as a message: the chunk's
// offset (4 bytes, big-endian) and its pixels. The display's program takes each message from its
// socket and stores the pixels in its frame buffer. exec_time_s is when the display has every
// chunk; the frame is then checked pixel by pixel.
class SocketRaytrace : public SocketWorkload {
 public:
  SocketRaytrace(const Config& c, Stats& st, uint64_t seed)
      : SocketWorkload(c, st, seed),
        sc_(c, cfg_.nodes, [this](double cy) { return sys_->cycles_ps(cy); }),
        screen_(c, sc_, sys_->os(0), st) {
    commands(c, {}, {});
  }
  void start() override {
    display();
    for (uint32_t n = 1; n <= sc_.calc; ++n) work(n, n - 1);
  }
  ordered_json summary() const override {
    ordered_json s = sc_.summary(done_, exec_ps_, frame_ok_);
    s["display"] = screen_.name();
    s["over"] = "udp";
    return s;
  }
  // The chunks the display has of the frame's.
  double done_fraction() const override { return static_cast<double>(received_) / std::max<uint32_t>(sc_.chunks, 1); }

 private:
  void display() {
    lib_[0]->recv([this](uint32_t, std::vector<uint8_t> m) {
      if (m.size() < 4) return sys_->fail("the display received a message without its chunk's offset");
      const uint32_t first = RayScene::offset_of(m.data());
      const uint32_t len = static_cast<uint32_t>(m.size() - 4);
      if (uint64_t{first} + len > sc_.bytes()) return sys_->fail("the display received a chunk outside its frame");
      screen_.show(first, std::vector<uint8_t>(m.begin() + 4, m.end()), [this] {
        if (++received_ < sc_.chunks) return display();
        exec_ps_ = now();  // the program has shown every chunk
        screen_.close([this](bool ok) {
          frame_ok_ = ok;
          finish();
        });
      });
    });
  }
  void work(uint32_t n, uint32_t k) {
    if (k >= sc_.chunks) return;
    sys_->compute(n, sc_.compute_ps(k), [this, n, k] {
      lib_[n]->send(0, sc_.message(k), [this, n, k] { work(n, k + sc_.calc); });
    });
  }
  const RayScene sc_;
  RayDisplay screen_;
  uint32_t received_ = 0;
  uint64_t exec_ps_ = 0;
  bool frame_ok_ = false;
};


// ------------------------------------------------------------------ over TCP (workload.over tcp)

// The thesis's TCP figures (6.2.3, 6.2.4, 6.3.3): a byte stream between host 0 and host 1 over
// each host's TCP (models/sockets/tcp.h), set up (listen, connect, accept) before the first
// measurement. A message is a run of bytes the receiver reads until it has all of them, and
// checks.
class TcpWorkload : public MbcfWorkload {
 public:
  static constexpr uint16_t kPort = 7000;
  TcpWorkload(const Config& c, Stats& st, uint64_t seed) : MbcfWorkload(c, st, seed) {}
  ordered_json summary() const override {
    ordered_json s = MbcfWorkload::summary();
    s["over"] = "tcp";
    return s;
  }
  std::string stalled() const override {
    if (!error_.empty()) return error_;
    return MbcfWorkload::stalled();
  }

 protected:
  sockets::Tcp& tcp(uint32_t n) { return cluster_.inet[n]->tcp(); }
  // A call failed: the run stops (exit 2) with the errno named.
  void failed(uint32_t host, const char* call, sockets::Errno e) {
    error_ = "host " + std::to_string(host) + ": " + call + " failed: " + to_string(e);
    sys_->fail(error_);
  }
  // Host `b` listens on `port`, host `a` connects, `b` accepts: then `k(fd at a, fd at b)`.
  void link(uint32_t a, uint32_t b, bool nodelay, uint16_t port, std::function<void(int, int)> k) {
    const int lfd = tcp(b).socket();
    if (auto e = tcp(b).listen(lfd, port); e != sockets::Errno::Ok) return failed(b, "listen", e);
    auto fds = std::make_shared<std::pair<int, int>>(-1, -1);
    auto both = [fds, k](bool) {
      if (fds->first >= 0 && fds->second >= 0) k(fds->first, fds->second);
    };
    tcp(b).accept(lfd, [this, b, fds, nodelay, both](sockets::Errno e, int fd) {
      if (e != sockets::Errno::Ok) return failed(b, "accept", e);
      tcp(b).set_nodelay(fd, nodelay);
      fds->second = fd;
      both(true);
    });
    const int cfd = tcp(a).socket();
    tcp(a).set_nodelay(cfd, nodelay);
    tcp(a).connect(cfd, b, port, [this, a, cfd, fds, both](sockets::Errno e) {
      if (e != sockets::Errno::Ok) return failed(a, "connect", e);
      fds->first = cfd;
      both(true);
    });
  }
  // Reads from `fd` at host `h` until `n` bytes came (each recv asks for what is still missing).
  void read_n(uint32_t h, int fd, uint32_t n, std::function<void(std::vector<uint8_t>)> k) {
    auto got = std::make_shared<std::vector<uint8_t>>();
    got->reserve(n);
    read_more(h, fd, n, got, std::move(k));
  }
  void check(uint32_t at, const std::vector<uint8_t>& got, uint32_t n, uint32_t salt) {
    if (got != pattern(n, salt))
      sys_->fail("host " + std::to_string(at) + " received a " + std::to_string(got.size()) + "-byte message that is not the " +
                 std::to_string(n) + "-byte message sent");
  }

 private:
  void read_more(uint32_t h, int fd, uint32_t n, std::shared_ptr<std::vector<uint8_t>> got,
                 std::function<void(std::vector<uint8_t>)> k) {
    tcp(h).recv(fd, n - static_cast<uint32_t>(got->size()), [this, h, fd, n, got, k = std::move(k)](sockets::Errno e, std::vector<uint8_t> d) mutable {
      if (e != sockets::Errno::Ok) return failed(h, "recv", e);
      if (d.empty()) return failed(h, "recv", sockets::Errno::NotConn);  // the peer closed mid-message
      got->insert(got->end(), d.begin(), d.end());
      if (got->size() < n) return read_more(h, fd, n, got, std::move(k));
      k(std::move(*got));
    });
  }
  std::string error_;
};

// rtt and oneway over TCP with TCP_NODELAY on both ends (6.3.3: the latencies of TCP1000 are
// measured with it): host 0 sends a message, host 1 sends one of the same size back when it has
// read it all.
class TcpPingPong : public PingPongClient<TcpWorkload> {
 public:
  TcpPingPong(const Config& c, Stats& st, uint64_t seed, bool oneway) : PingPongClient(c, st, seed, oneway, "TCP") {
    commands(c, {}, {});
    sizes_ = sizes(c, 1, 1u << 20, "a message of at most 1 MB");
  }
  void start() override {
    link(0, 1, true, kPort, [this](int a, int b) {
      fd0_ = a;
      fd1_ = b;
      serve();
      next_point();
    });
  }

 private:
  // Host 1 echoes every message; it knows the schedule (iterations + 2 rounds of each size).
  void serve() {
    if (ssi_ == sizes_.size()) return;
    read_n(1, fd1_, sizes_[ssi_], [this](std::vector<uint8_t> d) {
      check(1, d, sizes_[ssi_], sk_);
      if (++sk_ == iters_ + 2) {
        sk_ = 0;
        ++ssi_;
      }
      tcp(1).send(fd1_, std::move(d), [this](sockets::Errno e) {
        if (e != sockets::Errno::Ok) return failed(1, "send", e);
        serve();
      });
    });
  }
  void exchange(uint32_t n, uint32_t salt, std::function<void(std::vector<uint8_t>)> k) override {
    tcp(0).send(fd0_, pattern(n, salt), [this, n, k = std::move(k)](sockets::Errno e) mutable {
      if (e != sockets::Errno::Ok) return failed(0, "send", e);
      read_n(0, fd0_, n, std::move(k));
    });
  }
  uint32_t ssi_ = 0, sk_ = 0;
  int fd0_ = -1, fd1_ = -1;
};

// peak over TCP, with TCP_NODELAY on both ends if workload.tcp_nodelay says so (the thesis set it
// on SunOS, 6.2.3, and not on Solaris, 6.3.2): host 0 sends messages of each size, one
// send() each, as fast as the send buffer takes them; host 1 reads them. A peak rate is TCP's
// steady state, so workload.transfers messages are timed in the middle of a longer stream: the
// clock starts when host 1 has read a warm-up of 2 x (sockets.tcp_sendspace +
// sockets.tcp_recvspace) bytes (in whole messages), by which time the connection's start-up is
// over (slow start, and the first delayed ACK Nagle waits for, whose length is a timer's, not
// the data's) and what it held back in the two buffers has been read; it stops when host 1 has
// read the timed messages' last byte, while host 0 goes on sending as many again (a cool-down),
// so that the timed tail is not the stream's end, which Nagle holds until a delayed ACK. (Timed
// from the first send() to the stream's last byte, the rate of a small size fell with fewer
// sends: 0.036 MB/s at 4 bytes with 1,024 sends on the Ultra 60s, 0.20 with 16,384, 0.26 with
// 65,536.)
class TcpPeak : public TcpWorkload {
 public:
  TcpPeak(const Config& c, Stats& st, uint64_t seed) : TcpWorkload(c, st, seed) {
    commands(c, {}, {});
    sizes_ = sizes(c, 1, 1u << 20, "a message of at most 1 MB");
    count_ = static_cast<uint32_t>(c.get_int("workload.transfers"));
    const sockets::SocketConfig sc = sockets::SocketConfig::from(c);
    warm_bytes_ = 2ull * (sc.tcp_sendspace + sc.tcp_recvspace);
    jitter_ps_ = static_cast<uint64_t>(std::llround(c.get_double("workload.phase_jitter_ms") * 1e9));
    nodelay_ = c.get_bool("workload.tcp_nodelay");
    phase_ = Rng(seed, "workload.phase");
    check_ = c.get_string("workload.tcp_peak_method") == "check";
    if (check_) every_ = status_every(c, count_);
  }
  void start() override { next_point(); }

 protected:
  // A point's messages: the warm-up, the timed ones and the cool-down, as the receiver reads them.
  size_t planned_points() const override { return sizes_.size(); }
  double point_share() const override {
    if (check_) return static_cast<double>(rk_) / count_;
    return warm_ ? static_cast<double>(rk_) / (2.0 * warm_ + count_) : 0;
  }

 private:
  // Every size on a connection of its own (as a benchmark program run once per size), set up
  // before the clock starts: no size inherits another's congestion window or ACK timing.
  void next_point() {
    if (si_ == sizes_.size()) return finish();
    idle_ps_ = jitter_ps_ ? phase_.below(jitter_ps_) : 0;
    if (idle_ps_) return cal_->at(now() + idle_ps_, [this] { connect_point(); });
    connect_point();
  }
  void connect_point() {
    link(0, 1, nodelay_, static_cast<uint16_t>(kPort + si_), [this](int a, int b) {
      fd0_ = a;
      fd1_ = b;
      measure();
    });
  }
  void measure() {
    const uint32_t n = sizes_[si_];
    warm_ = static_cast<uint32_t>((warm_bytes_ + n - 1) / n);
    k_ = rk_ = 0;
    sent_all_ = read_all_ = false;
    if (check_) {  // MBCF's method: from the first send() on, no warm-up and no cool-down
      warm_ = 0;
      statuses_ = 0;
      mark_cpu();
      t0_ = now();
    }
    receive();
    step();
  }
  void receive() {
    const uint32_t n = sizes_[si_];
    read_n(1, fd1_, n, [this, n](std::vector<uint8_t> d) {
      check(1, d, n, rk_);
      if (++rk_ == warm_) {  // the warm-up is read: the clock starts
        mark_cpu();
        t0_ = now();
      }
      if (check_) return answer();
      if (rk_ == warm_ + count_) {  // the timed messages are read
        t_end_ = now();
        cpu_us_ = cpu_us_since_mark();
      }
      if (rk_ < 2 * warm_ + count_) return receive();
      read_all_ = true;
      point_done();
    });
  }
  // The check method: the receiver writes a 4-byte status (the group's number) after the last
  // message of each group of workload.ack_every.
  void answer() {
    if (rk_ % every_) return receive();
    std::vector<uint8_t> st(4);
    store_le(st.data(), 4, rk_ / every_);
    tcp(1).send(fd1_, std::move(st), [this](sockets::Errno e) {
      if (e != sockets::Errno::Ok) return failed(1, "send", e);
      if (rk_ < count_) return receive();
      read_all_ = true;
      point_done();
    });
  }
  // The sender reads the next group's status (they come in order): `k` once it has it.
  void read_status(std::function<void()> k) {
    read_n(0, fd0_, 4, [this, k = std::move(k)](std::vector<uint8_t> d) {
      if (load_le(d.data(), 4) != statuses_ + 1)
        return sys_->fail("host 0 read status " + std::to_string(load_le(d.data(), 4)) + " where it expected group " +
                          std::to_string(statuses_ + 1) + "'s");
      ++statuses_;
      k();
    });
  }
  void step() {
    const uint32_t n = sizes_[si_];
    if (check_ && k_ == count_) {  // the last group's status closes the measurement
      if (statuses_ < count_ / every_) return read_status([this] { step(); });
      t_end_ = now();
      cpu_us_ = cpu_us_since_mark();
      sent_all_ = true;
      return point_done();
    }
    // Before a new group, the status of the group before last must be back (one group in flight
    // while the previous one is being acknowledged), as MBCF's peak workload does.
    if (check_ && k_ % every_ == 0 && k_ / every_ >= 2 && statuses_ < k_ / every_ - 1) return read_status([this] { step(); });
    if (k_ == 2 * warm_ + count_) {
      sent_all_ = true;
      return point_done();
    }
    const uint32_t k = k_++;
    tcp(0).send(fd0_, pattern(n, k), [this](sockets::Errno e) {
      if (e != sockets::Errno::Ok) return failed(0, "send", e);
      step();
    });
  }
  void point_done() {
    if (!sent_all_ || !read_all_) return;
    const uint32_t n = sizes_[si_];
    const double s = (t_end_ - t0_) / 1e12;
    ordered_json p = point("TCP", n, count_ * static_cast<double>(n) / s / 1e6, "MB/s", cpu_us_ / count_);
    if (check_)
      p["status_every"] = every_;
    else
      p["warmup_messages"] = warm_;
    if (jitter_ps_) p["phase_idle_ms"] = six_significant(idle_ps_ / 1e9);
    points_.push_back(std::move(p));
    ++si_;
    next_point();
  }
  std::vector<uint32_t> sizes_;
  uint32_t count_, si_ = 0, k_ = 0, rk_ = 0, warm_ = 0;
  uint64_t warm_bytes_ = 0, jitter_ps_ = 0, idle_ps_ = 0;
  bool nodelay_ = false;
  bool check_ = false;  // workload.tcp_peak_method check
  uint32_t every_ = 16, statuses_ = 0;  // (check) messages per status; statuses the sender read
  Rng phase_;
  double cpu_us_ = 0;  // the sender's host CPU time while the timed messages were read
  int fd0_ = -1, fd1_ = -1;
  bool sent_all_ = false, read_all_ = false;
  uint64_t t0_ = 0, t_end_ = 0;
};

// raytrace over TCP: the ray tracer of the UDP run, each calculator with a connection to the
// display (host 0), which accepts them all and then, in one process, select()s over them and
// reads each message (the chunk's 4-byte offset, then its pixels) from the socket select()
// gave. Nagle on, as an application that sets no option. exec_time_s counts from time 0, the
// connections' set-up included (as the program's own start-up).
class TcpRaytrace : public TcpWorkload {
 public:
  TcpRaytrace(const Config& c, Stats& st, uint64_t seed)
      : TcpWorkload(c, st, seed),
        sc_(c, cfg_.nodes, [this](double cy) { return sys_->cycles_ps(cy); }),
        screen_(c, sc_, sys_->os(0), st) {
    commands(c, {}, {});
  }
  void start() override {
    const int l = tcp(0).socket();
    if (auto e = tcp(0).listen(l, kPort); e != sockets::Errno::Ok) return failed(0, "listen", e);
    accept_all(l);
    for (uint32_t n = 1; n <= sc_.calc; ++n) {
      const int fd = tcp(n).socket();
      tcp(n).connect(fd, 0, kPort, [this, n, fd](sockets::Errno e) {
        if (e != sockets::Errno::Ok) return failed(n, "connect", e);
        work(n, fd, n - 1);
      });
    }
  }
  ordered_json summary() const override {
    ordered_json s = sc_.summary(done_, exec_ps_, frame_ok_);
    s["display"] = screen_.name();
    s["over"] = "tcp";
    return s;
  }
  // The chunks the display has of the frame's.
  double done_fraction() const override { return static_cast<double>(received_) / std::max<uint32_t>(sc_.chunks, 1); }

 private:
  void accept_all(int l) {
    tcp(0).accept(l, [this, l](sockets::Errno e, int fd) {
      if (e != sockets::Errno::Ok) return failed(0, "accept", e);
      fds_.push_back(fd);
      if (fds_.size() < sc_.calc) return accept_all(l);
      display();
    });
  }
  void display() {
    cluster_.inet[0]->select(fds_, [this](sockets::Errno e, int fd) {
      if (e != sockets::Errno::Ok) return failed(0, "select", e);
      read_n(0, fd, 4, [this, fd](std::vector<uint8_t> hdr) {
        const uint32_t first = RayScene::offset_of(hdr.data());
        if (first >= sc_.bytes() || first % sc_.chunk) return sys_->fail("the display received a chunk outside its frame");
        read_n(0, fd, sc_.len(first / sc_.chunk), [this, first](std::vector<uint8_t> px) {
          screen_.show(first, std::move(px), [this] {
            if (++received_ < sc_.chunks) return display();
            exec_ps_ = now();  // the program has shown every chunk
            screen_.close([this](bool ok) {
              frame_ok_ = ok;
              finish();
            });
          });
        });
      });
    });
  }
  void work(uint32_t n, int fd, uint32_t k) {
    if (k >= sc_.chunks) return;
    sys_->compute(n, sc_.compute_ps(k), [this, n, fd, k] {
      tcp(n).send(fd, sc_.message(k), [this, n, fd, k](sockets::Errno e) {
        if (e != sockets::Errno::Ok) return failed(n, "send", e);
        work(n, fd, k + sc_.calc);
      });
    });
  }
  const RayScene sc_;
  RayDisplay screen_;
  uint32_t received_ = 0;
  uint64_t exec_ps_ = 0;
  std::vector<int> fds_;
  bool frame_ok_ = false;
};

}  // namespace

std::unique_ptr<Workload> make_socket_workload(const std::string& kind, const Config& c, Stats& stats, uint64_t seed) {
  const bool tcp = c.get_string("workload.over") == "tcp";
  if (kind == "raytrace") return tcp ? std::unique_ptr<Workload>(std::make_unique<TcpRaytrace>(c, stats, seed))
                                     : std::unique_ptr<Workload>(std::make_unique<SocketRaytrace>(c, stats, seed));
  if (c.get_int("mbcf.nodes") != 2) c.fail("mbcf.nodes", "rtt, oneway and peak over sockets run between 2 hosts");
  if (tcp && kind == "rtt") return std::make_unique<TcpPingPong>(c, stats, seed, false);
  if (tcp && kind == "oneway") return std::make_unique<TcpPingPong>(c, stats, seed, true);
  if (tcp && kind == "peak") return std::make_unique<TcpPeak>(c, stats, seed);
  if (kind == "rtt") return std::make_unique<SocketPingPong>(c, stats, seed, false);
  if (kind == "oneway") return std::make_unique<SocketPingPong>(c, stats, seed, true);
  if (kind == "peak") return std::make_unique<SocketPeak>(c, stats, seed);
  c.fail("workload.over", "workload.kind " + kind + " runs over mbcf only (udp and tcp carry rtt, oneway, peak and raytrace)");
}

}  // namespace mbpsim
