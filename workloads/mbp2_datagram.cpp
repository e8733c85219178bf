// The MBP2's message passing measured (`datagram`, 8.3.1, 8.3.3): UDP/IP and TCP/IP datagrams
// between user tasks through their doorbells and receive rings.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "models/core/error.h"
#include "models/mbp2/mbp2_cards.h"
#include "workloads/mbcf_points.h"
#include "workloads/mbcf_workloads.h"

namespace mbpsim {

using nlohmann::json;
using nlohmann::ordered_json;
using namespace mbpsim::mbcf;
using namespace mbpsim::mbcf_points;

namespace {

// ------------------------------------------------------------------ datagram (8.3.1, 8.3.3)

// Message passing on the MBP2: UDP/IP or TCP/IP datagrams between user tasks, with no system
// call and no copy by either host. Per size: the round trip of an echo (node 1's task polls
// its receive ring and sends each datagram back), then the peak rate of a stream of
// `workload.transfers` datagrams that node 1's task takes from its ring as they come; every
// payload is compared with what was sent. The sender's host CPU per datagram is reported.
class DatagramWorkload : public MbcfWorkload {
 public:
  DatagramWorkload(const Config& c, Stats& st, uint64_t seed) : MbcfWorkload(c, st, seed) {
    mbp2_ = mbp2();
    if (!mbp2_) c.fail("workload.kind", "datagram: UDP/TCP steering is the MBP2's; needs mbcf.nic = mbp2");
    if (cfg_.nodes < 2) c.fail("mbcf.nodes", "datagram: needs two nodes");
    commands(c, {}, {});  // message passing: no MBCF command
    proto_ = c.get_string("workload.protocol") == "tcp" ? mbp2::kIpProtoTcp : mbp2::kIpProtoUdp;
    sizes_ = sizes(c, 1, mbp2::kUdpMaxPayload, "UDP's largest datagram");
    // UDP datagrams longer than one frame go in IP fragments, which the receiving NIC holds in
    // half its receive buffers at most while it reassembles; TCP segments fit one frame.
    const uint32_t mtu = mbp2_->nic(0).mtu(), rx_share = std::max<uint32_t>(1, cfg_.rx_ring / 2);
    uint32_t largest = 0;
    for (uint32_t n : sizes_) {
      largest = std::max(largest, n);
      if (proto_ == mbp2::kIpProtoTcp && n + mbp2::kIpHeader + mbp2::kTcpHeader > mtu)
        c.fail("workload.sizes", "datagram: a TCP segment of " + std::to_string(n) + " bytes does not fit one frame (" +
                                     std::to_string(mtu - mbp2::kIpHeader - mbp2::kTcpHeader) + " bytes at most here)");
      if (proto_ == mbp2::kIpProtoUdp && n > mbp2::kUdpMaxPayload)
        c.fail("workload.sizes", "datagram: a UDP datagram of " + std::to_string(n) + " bytes is longer than IP allows (" +
                                     std::to_string(mbp2::kUdpMaxPayload) + " bytes at most)");
      if (proto_ == mbp2::kIpProtoUdp && mbp2::udp_frames(n, mtu) > rx_share)
        c.fail("workload.sizes", "datagram: a UDP datagram of " + std::to_string(n) + " bytes takes " + std::to_string(mbp2::udp_frames(n, mtu)) +
                                     " fragments, more than the " + std::to_string(rx_share) + " receive buffers a NIC reassembles in (half of mbcf.rx_ring)");
    }
    // The user's buffers and ring: the usual ones while a datagram fits a frame, larger ones
    // mapped apart beyond.
    if (largest + kSlotHeader > kSlotBytes) {
      buffer_bytes_ = (largest + 63) & ~63u;
      slot_bytes_ = (mbp2::Mbp2Nic::kSlotHeader + largest + 63) & ~63u;
      src_ = kLargeArea;
      ring_ = kLargeArea + ((kBuffers * buffer_bytes_ + 0xffff) & ~0xffffu);
      for (uint32_t n = 0; n < 2; ++n) {
        TaskSpace& ts = sys_->space(n);
        const uint64_t bytes = ring_ - src_ + mbp2::Mbp2Nic::kRingHeader + static_cast<uint64_t>(kSlots) * slot_bytes_;
        ts.map(*ts.find(kPtask), src_, static_cast<uint32_t>((bytes + ts.page_bytes() - 1) / ts.page_bytes()), kPermRW);
      }
    }
    iters_ = static_cast<uint32_t>(c.get_int("workload.iterations"));
    count_ = static_cast<uint32_t>(c.get_int("workload.transfers"));
    timeout_ps_ = static_cast<uint64_t>(c.get_double("workload.timeout_us") * 1e6);
    for (uint32_t n = 0; n < 2; ++n) {
      mbp2_->nic(n).init_ring(kPtask, ring_, kSlots, slot_bytes_);
      const bool ok = proto_ == mbp2::kIpProtoUdp
                          ? mbp2_->nic(n).bind_udp(kPtask, kPort, ring_)
                          : mbp2_->nic(n).connect_tcp(kPtask, kPort, 1 - n, kPort, ring_, 1000 * (n + 1), 1000 * (2 - n));
      if (!ok) internal_error("datagram: binding the port failed");
    }
  }
  void start() override { next_size(); }

 protected:
  // Two points a size: the echo's round trips, then the stream.
  size_t planned_points() const override { return 2 * sizes_.size(); }
  double point_share() const override {
    return points_.size() % 2 == 0 ? static_cast<double>(i_) / (iters_ + 2) : static_cast<double>(taken_) / count_;
  }

 public:
  ordered_json summary() const override {
    ordered_json s = MbcfWorkload::summary();
    s["protocol"] = proto_ == mbp2::kIpProtoTcp ? "tcp" : "udp";
    s["checked_bytes"] = checked_;
    s["mismatched_datagrams"] = mismatched_;
    s["send_buffer_waits"] = buffer_waits_;
    s["echo_timeouts"] = echo_timeouts_;
    s["stray_datagrams"] = stray_;
    s["duplicate_datagrams"] = duplicates_;
    return s;
  }

 private:
  static constexpr uint32_t kSlots = 32, kSlotBytes = 1536, kSlotHeader = mbp2::Mbp2Nic::kSlotHeader;
  static constexpr uint32_t kLargeArea = 0x1000000;  // buffers and ring for datagrams beyond a frame
  static constexpr uint16_t kPort = 7;
  const char* name() const { return proto_ == mbp2::kIpProtoTcp ? "TCP" : "UDP"; }
  // The user's send buffers: the PGE reads a payload when it fetches the send structure, so a
  // task may not reuse a buffer before (send() waits for it); the stream cycles through
  // kBuffers of them.
  static constexpr uint32_t kBuffers = 32, kBufferBytes = 2048;
  uint32_t buffer(uint32_t k) const { return src_ + (k % kBuffers) * buffer_bytes_; }
  mbp2::Mbp2Nic::DatagramRequest req(uint32_t from, uint32_t n, uint32_t k) const {
    mbp2::Mbp2Nic::DatagramRequest d;
    d.proto = proto_;
    d.dst_node = 1 - from;
    d.src_port = d.dst_port = kPort;
    d.laddr = buffer(k);
    d.len = n;
    return d;
  }
  bool ready(uint32_t node) {
    TaskSpace& ts = sys_->space(node);
    const Task& t = *ts.find(kPtask);
    return ts.load32(t, ring_ + 8) != ts.load32(t, ring_ + 12);
  }
  // A datagram's payload: pattern(), its first bytes replaced by the salt (big-endian; below 4
  // bytes its low-order bytes), so a datagram says which it is.
  static std::vector<uint8_t> dgram(uint32_t n, uint32_t salt) {
    std::vector<uint8_t> d = pattern(n, salt);
    const uint32_t m = std::min(n, 4u);
    for (uint32_t i = 0; i < m; ++i) d[i] = static_cast<uint8_t>(salt >> (8 * (m - 1 - i)));
    return d;
  }
  static uint32_t salt_of(const std::vector<uint8_t>& p) {
    uint32_t v = 0;
    for (uint32_t i = 0; i < p.size() && i < 4; ++i) v = v << 8 | p[i];
    return v;
  }
  // Some datagram the workload sent, if not the one expected: a try before, a copy duplicated
  // on the wire, one left from an earlier phase. Anything else is a payload the system damaged.
  static bool is_dgram(const std::vector<uint8_t>& p) { return p == dgram(static_cast<uint32_t>(p.size()), salt_of(p)); }
  // Takes the next datagram of the stream: each says which it is (from 4 bytes; below, the next
  // one sent or a later one within 256, found by its pattern). A second copy of one (duplicated
  // on the wire) is not taken again, and another datagram (a request of the echo phase,
  // duplicated or late) is not the stream's.
  void take_stream(uint32_t n) {
    std::vector<uint8_t> got;
    if (!mbp2_->nic(1).take(kPtask, ring_, &got)) internal_error("datagram: the ring was ready but empty");
    checked_ += got.size();
    int64_t k = -1;
    if (n >= 4) {
      const uint32_t salt = salt_of(got);
      if (got.size() == n && salt >= 1000 && salt - 1000 < count_ && got == dgram(n, salt)) k = salt - 1000;
    } else {
      for (uint32_t j = next_ > 256 ? next_ - 256 : 0; j < count_ && j < next_ + 256 && k < 0; ++j)
        if (got == dgram(n, 1000 + j)) k = j;
    }
    if (k < 0) {
      if (is_dgram(got)) ++stray_;
      else ++mismatched_;
      return;
    }
    if (seen_[k]) {
      ++duplicates_;
      return;
    }
    seen_[k] = true;
    ++taken_;
    next_ = std::max<uint32_t>(next_, static_cast<uint32_t>(k) + 1);
  }
  // Writes the datagram of `salt` into send buffer `buf` and sends it from there, once the PGE
  // has fetched the datagram that used the buffer before (the task polls the count of fetched
  // send structures its NIC writes back).
  void send(uint32_t from, uint32_t n, uint32_t salt, uint32_t buf, std::function<void()> k) { send(from, dgram(n, salt), buf, std::move(k)); }
  void send(uint32_t from, std::vector<uint8_t> p, uint32_t buf, std::function<void()> k) {
    const uint32_t b = buf % kBuffers;
    const int64_t before = last_use_[from][b];
    const int64_t m = sent_[from]++;
    last_use_[from][b] = m;
    auto go = [this, from, p = std::move(p), buf, k = std::move(k)]() mutable {
      const uint32_t n = static_cast<uint32_t>(p.size());
      sys_->space(from).write(*sys_->space(from).find(kPtask), buffer(buf), p.data(), n);
      if (!mbp2_->nic(from).send_datagram(kPtask, req(from, n, buf), std::move(k))) internal_error("datagram: a send was refused");
    };
    auto fetched = [this, from, before] { return static_cast<int64_t>(mbp2_->nic(from).fetched(kPtask)) > before; };
    if (fetched()) return go();
    ++buffer_waits_;
    sys_->poll(from, fetched, std::move(go));
  }
  void next_size() {
    if (si_ == sizes_.size()) return finish();
    fragmented_ = proto_ == mbp2::kIpProtoUdp && mbp2::udp_frames(sizes_[si_], mbp2_->nic(0).mtu()) > 1;
    i_ = 0;
    sum_ = 0;
    mark_cpu();
    echo();
  }
  // --- round trip: node 0 sends, node 1's task echoes every datagram it takes, node 0 takes
  // the echo. A datagram or its echo lost on the wire: node 0 sends again (a new pattern) after
  // workload.timeout_us; an echo of an earlier try that arrives later is taken and ignored.
  void echo() {
    const uint32_t n = sizes_[si_];
    if (i_ == 0 && !serving_) {
      serving_ = true;
      serve(++serve_gen_);
    }
    if (i_ == 2 && tries_ == 0) mark_cpu();
    const uint64_t t0 = now();
    const uint32_t salt = ++salt_;
    ++tries_;
    send(0, n, salt, 0, [this, n, t0, salt] { await_echo(n, t0, salt, now() + timeout_ps_); });  // one buffer: one datagram out
  }
  void await_echo(uint32_t n, uint64_t t0, uint32_t salt, uint64_t deadline) {
    sys_->poll_until(0, [this] { return ready(0); }, deadline, [this, n, t0, salt, deadline](bool got) {
      if (!got) {
        ++echo_timeouts_;
        return echo();
      }
      std::vector<uint8_t> p;
      if (!mbp2_->nic(0).take(kPtask, ring_, &p)) internal_error("datagram: the ring was ready but empty");
      checked_ += p.size();
      if (p != dgram(n, salt)) {
        if (is_dgram(p)) ++stray_;
        else ++mismatched_;
        return await_echo(n, t0, salt, deadline);
      }
      tries_ = 0;
      if (i_ >= 2) sum_ += static_cast<double>(now() - t0) + timer_read_ps();
      if (++i_ < iters_ + 2) return echo();
      serving_ = false;
      // The sender's CPU per datagram: it sent one and took one per round trip.
      points_.push_back(point(std::string(name()) + "_ECHO", n, sum_ / iters_ / 1e6, "us", cpu_us_since_mark() / iters_ / 2));
      stream();
    });
  }
  // Node 1's task during an echo phase (`gen`): takes each datagram and sends it back.
  void serve(uint32_t gen) {
    auto over = [this, gen] { return !serving_ || gen != serve_gen_; };
    sys_->poll(1, [this, over] { return ready(1) || over(); }, [this, gen, over] {
      if (over()) return;  // the echo phase is over: what arrives now is the stream's
      std::vector<uint8_t> p;
      if (!mbp2_->nic(1).take(kPtask, ring_, &p)) internal_error("datagram: the ring was ready but empty");
      checked_ += p.size();
      send(1, std::move(p), 0, [this, gen] { serve(gen); });
    });
  }
  // --- peak rate: node 0 streams, node 1's task takes what arrives
  void stream() {
    const uint32_t n = sizes_[si_];
    k_ = taken_ = next_ = 0;
    seen_.assign(count_, false);
    const uint64_t dropped = drops();
    if (tcp()) retransmits_before_ = retransmits();
    mark_cpu();
    t0_ = now();
    receive_next(n, dropped);
    send_next(n);
  }
  // Between NICs that encrypt, the receiver loses sealed frames it could not open or had no
  // buffer for without knowing what they carried: here every sealed frame is a datagram,
  // unless datagrams go in fragments (a lost fragment's datagram is counted when its
  // reassembly gives up).
  uint64_t drops() const { return mbp2_->nic(1).datagrams_dropped() + (fragmented_ ? 0 : mbp2_->nic(1).sealed_frames_lost()); }
  void send_next(uint32_t n) {
    if (k_ == count_) return;
    const uint32_t salt = 1000 + k_;
    ++k_;
    send(0, n, salt, k_, [this, n] { send_next(n); });
  }
  // UDP has no flow control: a receiving NIC that falls behind the wire drops datagrams
  // (counted). The stream ends when every datagram was taken or dropped (the harness reads the
  // drop counters); the rate is the payload delivered.
  // Datagrams lost on the wire are never counted by the receiver's NIC: once the sender is done
  // and nothing arrived for workload.timeout_us, the stream ends with them counted as lost and
  // its rate taken at the last datagram.
  // TCP's NICs recover what the receiver dropped or the wire lost (the receiver's window and
  // the sender's images pace the stream): it ends when every segment was taken, or when the
  // sender's NIC holds nothing unacknowledged and nothing came for workload.timeout_us (a
  // connection given up: mbp2.tcp_max_retries).
  bool tcp() const { return proto_ == mbp2::kIpProtoTcp; }
  bool tcp_pending() const { return tcp() && mbp2_->nic(0).tcp_unacked(kPort, 1, kPort) > 0; }
  void receive_next(uint32_t n, uint64_t dropped_before) {
    auto accounted = [this, dropped_before] { return taken_ + (tcp() ? 0 : drops() - dropped_before) >= count_; };
    sys_->poll_until(1, [this, accounted] { return ready(1) || accounted(); }, now() + timeout_ps_, [this, n, dropped_before, accounted](bool got) {
      if (!got && (k_ < count_ || tcp_pending())) return receive_next(n, dropped_before);  // the sender is still at it
      if (ready(1)) {
        take_stream(n);
        last_take_ = now();
        if (!accounted()) return receive_next(n, dropped_before);
      }
      const double s = ((got ? now() : last_take_) - t0_) / 1e12;
      ordered_json p = point(std::string(name()) + "_STREAM", n, taken_ * static_cast<double>(n) / s / 1e6, "MB/s", cpu_us_since_mark() / count_);
      p["dropped"] = drops() - dropped_before;
      // (The NIC's drops include second copies it had no room for: never below zero. TCP's
      // drops were sent again: what was not taken is lost.)
      p["lost"] = std::max<int64_t>(0, static_cast<int64_t>(count_) - taken_ - static_cast<int64_t>(tcp() ? 0 : drops() - dropped_before));
      if (tcp()) p["retransmitted"] = retransmits() - retransmits_before_;
      points_.push_back(p);
      ++si_;
      next_size();
    });
  }

  mbp2::Mbp2Cards* mbp2_ = nullptr;
  uint32_t src_ = kSrc, ring_ = kDst, buffer_bytes_ = kBufferBytes, slot_bytes_ = kSlotBytes;
  bool fragmented_ = false;  // this size's datagrams go in IP fragments
  uint8_t proto_ = mbp2::kIpProtoUdp;
  std::vector<uint32_t> sizes_;
  uint32_t iters_ = 0, count_ = 0, si_ = 0, i_ = 0, k_ = 0, taken_ = 0, next_ = 0;
  double sum_ = 0;
  uint64_t t0_ = 0, checked_ = 0, mismatched_ = 0, buffer_waits_ = 0;
  uint64_t retransmits_before_ = 0;
  uint64_t retransmits() const { return mbp2_->nic(0).tcp_retransmits(); }
  uint64_t timeout_ps_ = 0, last_take_ = 0, echo_timeouts_ = 0, stray_ = 0, duplicates_ = 0;
  // Echo tries have salts of their own, apart from the stream's (1000 + datagram number).
  static constexpr uint32_t kEchoSalt0 = 0x80000000u;
  uint32_t salt_ = kEchoSalt0, tries_ = 0, serve_gen_ = 0;
  bool serving_ = false;
  std::vector<bool> seen_;  // the stream's datagrams taken
  int64_t sent_[2] = {0, 0};  // datagrams each node's task has sent
  std::vector<int64_t> last_use_[2] = {std::vector<int64_t>(kBuffers, -1), std::vector<int64_t>(kBuffers, -1)};
};

}  // namespace

std::unique_ptr<Workload> make_datagram_workload(const Config& c, Stats& stats, uint64_t seed) {
  return std::make_unique<DatagramWorkload>(c, stats, seed);
}

}  // namespace mbpsim
