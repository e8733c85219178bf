// TCP on the MBP2's PME (thesis 8.2: "firmware programs on the PME realize ... IP protocol, TCP
// protocol"): acknowledgements, retransmission and windows, so a TCP stream between two MBP2s
// survives loss, corruption and reordering on the wire with no work for either host.
//
// Sending. A segment the PGE fetched keeps its image in EM until the peer acknowledges it: the
// images (mbp2.ring_entries of them) are the connection's send buffer, and a PGE that finds
// none free waits, and the doorbells behind it. Segments leave while they fit both the peer's
// advertised window and the congestion window (RFC 5681: slow start from RFC 3390's initial
// window, congestion avoidance above ssthresh). The retransmission timer follows RFC 6298 (SRTT
// and RTTVAR from samples of segments sent once, Karn; doubled on each timeout; floor
// mbp2.tcp_rto_min_us). The receiving NIC keeps no segment beyond a gap (the OCU drops it), so
// every segment after a loss is lost too: on three duplicate ACKs (fast retransmit) or a
// timeout the sender goes back to the oldest unacknowledged segment and sends everything from
// there again, within the windows (Go-back-N, which is what this receiver needs). A shut window
// is probed with the first waiting segment when the persist timer (the RTO) expires. After
// mbp2.tcp_max_retries timeouts in a row the connection is given up and its images freed.
//
// Receiving. Every segment's ACK and window are taken first (the sender's half). A segment
// with data in order and delivered by the PGE is acknowledged every mbp2.tcp_ack_every
// segments or after mbp2.tcp_delack_us; one out of order, a duplicate, or one the ring had no
// room for is acknowledged at once (a duplicate ACK). A segment this node sends carries the ACK
// too. The window advertised is the room in the task's ring, counted from the tail the PGE
// last read (the NIC learns that the task took entries only when it reads the ring again; a
// sender facing a shut window learns it from its probe's answer).
//
// Not modelled: the handshake and the close (the OS sets a connection up on both nodes,
// connect_tcp), SACK, timestamps, window scaling, Nagle and silly-window avoidance (every
// segment is one user datagram, sized by the user).
#include <algorithm>

#include "models/core/error.h"
#include "models/mbp2/mbp2_tcp.h"

#include "models/mbp2/mbp2_nic.h"

namespace mbpsim::mbp2 {

namespace {
// Sequence-space comparisons (RFC 793: modulo 2^32).
bool seq_lt(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }
bool seq_le(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) <= 0; }
constexpr uint64_t kRtoMaxPs = 60'000'000'000'000ull;  // RFC 6298 2.5: at least 60 s
}  // namespace

uint32_t PmeTcp::table_word(uint32_t conn, uint32_t off) const {
  return nic_.kli_->load32(Mbp2Nic::kConnTable + conn * Mbp2Nic::kConnBytes + off);
}

uint32_t PmeTcp::mss() const { return nic_.mtu() - kIpHeader - kTcpHeader; }

void PmeTcp::open(uint32_t conn, uint32_t ptask, uint32_t peer, uint16_t lport, uint16_t rport, uint32_t iss, uint32_t rx_slots,
                  uint32_t rx_slot_bytes) {
  Conn& T = conns_[conn] = Conn{};
  T.ptask = ptask;
  T.peer = peer;
  T.lport = lport;
  T.rport = rport;
  T.una = iss;
  // RFC 3390's initial window; no window from the peer yet (no handshake): the largest unscaled one.
  T.cwnd = std::min(4 * mss(), std::max(2 * mss(), 4380u));
  T.rto = static_cast<uint64_t>(nic_.m_.tcp_rto_initial_us * 1e6);
  T.rx_slots = rx_slots;
  T.rx_slot_bytes = rx_slot_bytes;
}

void PmeTcp::ring_read(uint32_t conn, uint32_t slots, uint32_t slot_bytes, uint32_t tail) {
  if (auto it = conns_.find(conn); it != conns_.end()) {
    it->second.rx_slots = slots;
    it->second.rx_slot_bytes = slot_bytes;
    it->second.rx_tail = tail;
  }
}

uint32_t PmeTcp::unacked(uint32_t conn) const {
  auto it = conns_.find(conn);
  if (it == conns_.end() || it->second.q.empty()) return 0;
  const Seg& last = it->second.q.back();
  return last.seq + last.len - it->second.una;
}

void PmeTcp::power_off() {
  for (auto& [conn, T] : conns_) {
    T.q.clear();
    T.sent = 0;
    T.una = table_word(conn, 16);
    T.timer = T.delack = 0;
    T.unacked = T.dupacks = T.backoffs = 0;
    T.recovering = false;
  }
}

uint32_t PmeTcp::rcv_nxt(uint32_t conn) const {
  return table_word(conn, 24);
}

uint16_t PmeTcp::window(uint32_t conn) const {
  const Conn& T = conns_.at(conn);
  if (T.rx_slots == 0 || T.rx_slot_bytes <= Mbp2Nic::kSlotHeader) return 0xffff;  // (no ring known)
  const uint32_t head = table_word(conn, 28);
  const uint32_t used = std::min(T.rx_slots, head - T.rx_tail);
  const uint64_t room = static_cast<uint64_t>(T.rx_slots - used) * (T.rx_slot_bytes - Mbp2Nic::kSlotHeader);
  return static_cast<uint16_t>(std::min<uint64_t>(room, 0xffff));
}

Datagram PmeTcp::datagram(uint32_t conn, uint32_t seq, uint32_t ack, uint16_t window) {
  Mbp2Nic& u = nic_;
  const Conn& T = conns_.at(conn);
  Datagram d;
  d.proto = kIpProtoTcp;
  d.src_node = nic_.node_;
  d.dst_node = T.peer;
  d.src_port = T.lport;
  d.dst_port = T.rport;
  d.ip_id = ++u.ip_id;
  d.seq = seq;
  d.ack = ack;
  d.window = window;
  return d;
}

void PmeTcp::queue(uint32_t conn, uint32_t seq, uint32_t len, int32_t img) {
  Conn& T = conns_.at(conn);
  Seg s;
  s.seq = seq;
  s.len = len;
  s.img = img;  // the fetch's hold on the image is kept until the segment is acknowledged
  T.q.push_back(s);
  output(conn);
}

void PmeTcp::output(uint32_t conn) {
  Mbp2Nic& u = nic_;
  Conn& T = conns_.at(conn);
  const uint32_t win = std::min(T.wnd, T.cwnd);
  std::vector<uint32_t> seqs;
  while (T.sent < T.q.size()) {
    Seg& s = T.q[T.sent];
    if (s.seq + s.len - T.una > win) break;
    s.pass = T.pass;
    seqs.push_back(s.seq);
    ++T.sent;
  }
  if (T.sent < T.q.size() && seqs.empty() && T.sent == 0) u.ip.tcp_window_waits->inc();
  if (seqs.empty()) {
    if (T.sent == 0 && !T.q.empty() && !T.timer) arm(conn);  // the persist timer: the window is shut
    return;
  }
  // The PME builds each segment's headers (the CSU-T's sum of the payload taken once, at the
  // fetch; a segment sent again has its header words summed anew) and hands it to the LDMA.
  const uint32_t inc = nic_.sys_->incarnation(nic_.node_);
  const uint64_t dur = u.pme_->instr_ps(nic_.m_.ip_header_instr * static_cast<double>(seqs.size()));  // (before seqs moves)
  u.pme_->run("tcp_output", Pme::kNormal, false, dur,
             [this, conn, inc, pass = T.pass, seqs = std::move(seqs)] {
               if (!nic_.sys_->up(nic_.node_) || nic_.sys_->incarnation(nic_.node_) != inc) return;
               Mbp2Nic& u = nic_;
               Conn& T = conns_.at(conn);
               for (uint32_t seq : seqs) {
                 auto it = std::find_if(T.q.begin(), T.q.end(), [seq](const Seg& s) { return s.seq == seq; });
                 // Acknowledged meanwhile (a copy sent before reached the peer), or picked again by
                 // a go-back since: the later pass sends it.
                 if (it == T.q.end() || it->pass != pass) continue;
                 Seg& s = *it;
                 const bool first = s.tx++ == 0;
                 if (!first) u.ip.tcp_retransmits->inc();
                 s.sent_ps = nic_.cal_.now_ps();
                 const Datagram d = datagram(conn, s.seq, rcv_nxt(conn), window(conn));
                 const std::vector<uint8_t> payload = s.len ? u.em_->read(nic_.image_offset(s.img), s.len) : std::vector<uint8_t>{};
                 std::vector<uint8_t> f = build_inet(d, payload.data(), s.len);
                 if (first && u.csu_) u.csu_->transmit(f);
                 T.unacked = 0;  // the segment carries the ACK
                 T.delack = 0;
                 ++u.dg_held[static_cast<uint32_t>(s.img)];  // until the LDMA has read the frame from it
                 const int32_t img = s.img;
                 const uint32_t dst = T.peer;
                 nic_.nic_transmit(dst, std::move(f), [this, dst, img, inc](std::vector<uint8_t>&& b) {
                   nic_.image_done(img, inc);
                   nic_.to_wire(dst, std::move(b));  // (not sent: the timer brings it again)
                 });
               }
               if (!T.timer && T.sent) arm(conn);
             });
}

void PmeTcp::arm(uint32_t conn) {
  Conn& T = conns_.at(conn);
  const uint64_t serial = T.timer = ++nic_.timer_serial_;
  const uint32_t inc = nic_.sys_->incarnation(nic_.node_);
  nic_.cal_.after(T.rto, [this, conn, serial, inc] {
    if (!nic_.sys_->up(nic_.node_) || nic_.sys_->incarnation(nic_.node_) != inc) return;
    auto it = conns_.find(conn);
    if (it == conns_.end() || it->second.timer != serial) return;
    it->second.timer = 0;
    timeout(conn);
  });
}

void PmeTcp::timeout(uint32_t conn) {
  Mbp2Nic& u = nic_;
  Conn& T = conns_.at(conn);
  if (T.q.empty()) return;
  T.rto = std::min(2 * T.rto, kRtoMaxPs);  // (RFC 6298 5.5; kept until a new sample)
  if (T.sent == 0) {  // the persist timer: probe the shut window with the first waiting segment
    u.ip.tcp_probes->inc();
    const uint32_t wnd = T.wnd, cwnd = T.cwnd;
    T.wnd = T.cwnd = T.q[0].seq + T.q[0].len - T.una;  // room for that one alone, for this call
    output(conn);
    T.wnd = wnd;
    T.cwnd = cwnd;
    return;
  }
  u.ip.tcp_timeouts->inc();
  if (++T.backoffs > nic_.m_.tcp_max_retries) return abort(conn);
  // RFC 5681 3.1: ssthresh to half the flight, the congestion window to one segment.
  T.ssthresh = std::max((T.sent_end() - T.una) / 2, 2 * mss());
  T.cwnd = mss();
  T.dupacks = 0;
  T.recovering = false;
  ++T.pass;
  T.sent = 0;  // go back to the oldest unacknowledged segment
  output(conn);
}

void PmeTcp::abort(uint32_t conn) {
  Mbp2Nic& u = nic_;
  Conn& T = conns_.at(conn);
  u.ip.tcp_aborts->inc();
  const uint32_t inc = nic_.sys_->incarnation(nic_.node_);
  for (const Seg& s : T.q) nic_.image_done(s.img, inc);
  // What the user queued after is numbered on; the peer, still expecting the lost bytes, drops
  // it (a connection given up is the OS's to set up again).
  T.una = table_word(conn, 16);
  T.q.clear();
  T.sent = 0;
  T.timer = 0;
  T.backoffs = 0;
  T.dupacks = 0;
  T.recovering = false;
  nic_.fw_run_pollers(nic_.cal_.now_ps());
}

void PmeTcp::ack_in(uint32_t conn, const Datagram& d, uint32_t len) {
  Mbp2Nic& u = nic_;
  Conn& T = conns_.at(conn);
  if (!(d.flags & kTcpAck)) return;
  if (len == 0) u.ip.tcp_acks_rx->inc();
  // An acceptable ACK covers no more than the highest segment sent (after a go-back, copies
  // sent before may still be acknowledged).
  uint32_t highest = T.una;
  for (const Seg& s : T.q)
    if (s.tx) highest = seq_lt(highest, s.seq + s.len) ? s.seq + s.len : highest;
  if (seq_lt(T.una, d.ack) && seq_le(d.ack, highest)) {
    // New data acknowledged: its images go back to the PGE.
    const uint32_t inc = nic_.sys_->incarnation(nic_.node_);
    uint32_t acked = 0;
    uint64_t sample = 0;
    bool sampled = false;
    while (!T.q.empty() && seq_le(T.q.front().seq + T.q.front().len, d.ack)) {
      const Seg& s = T.q.front();
      if (s.tx == 1) {
        sample = nic_.cal_.now_ps() - s.sent_ps;
        sampled = true;
      }
      acked += s.len;
      nic_.image_done(s.img, inc);
      T.q.pop_front();
      if (T.sent) --T.sent;
    }
    T.una = d.ack;
    if (sampled) {  // RFC 6298 2.2, 2.3
      if (!T.rtt_known) {
        T.srtt = sample;
        T.rttvar = sample / 2;
        T.rtt_known = true;
      } else {
        const uint64_t dev = T.srtt > sample ? T.srtt - sample : sample - T.srtt;
        T.rttvar = (3 * T.rttvar + dev) / 4;
        T.srtt = (7 * T.srtt + sample) / 8;
      }
      T.rto = std::min(std::max(T.srtt + 4 * T.rttvar, static_cast<uint64_t>(nic_.m_.tcp_rto_min_us * 1e6)), kRtoMaxPs);
    }
    T.backoffs = 0;
    T.dupacks = 0;
    if (T.recovering && seq_le(T.recover, d.ack)) T.recovering = false;
    // RFC 5681 3.1: slow start below ssthresh, congestion avoidance above.
    if (T.cwnd < T.ssthresh) T.cwnd += std::min(acked, mss());
    else T.cwnd += std::max<uint32_t>(1, mss() * mss() / std::max<uint32_t>(1, T.cwnd));
    T.cwnd = std::min<uint32_t>(T.cwnd, 1u << 30);
    T.wnd = d.window;
    T.timer = 0;  // RFC 6298 5.2, 5.3: stopped, or restarted below
    if (T.sent) arm(conn);
  } else if (d.ack == T.una) {
    if (len == 0 && T.sent && d.window == T.wnd) {
      u.ip.tcp_dup_acks->inc();
      if (++T.dupacks == 3 && !T.recovering) {  // fast retransmit (RFC 5681 3.2), from the oldest
        u.ip.tcp_fast_retransmits->inc();
        T.ssthresh = std::max((T.sent_end() - T.una) / 2, 2 * mss());
        T.cwnd = T.ssthresh;
        T.recover = T.sent_end();
        T.recovering = true;
        ++T.pass;
        T.sent = 0;
        T.timer = 0;
        arm(conn);
      }
    }
    const bool opened = d.window > T.wnd;
    T.wnd = d.window;  // a window update
    if (opened && T.sent == 0) T.timer = 0;  // (the persist timer: no longer needed)
  }
  output(conn);
}

void PmeTcp::received(uint32_t conn, bool delivered) {
  Conn& T = conns_.at(conn);
  if (!delivered || ++T.unacked >= nic_.m_.tcp_ack_every) return send_ack(conn);
  if (T.delack) return;
  const uint64_t serial = T.delack = ++nic_.timer_serial_;
  const uint32_t inc = nic_.sys_->incarnation(nic_.node_);
  nic_.cal_.after(static_cast<uint64_t>(nic_.m_.tcp_delack_us * 1e6), [this, conn, serial, inc] {
    if (!nic_.sys_->up(nic_.node_) || nic_.sys_->incarnation(nic_.node_) != inc) return;
    auto it = conns_.find(conn);
    if (it == conns_.end() || it->second.delack != serial) return;
    send_ack(conn);
  });
}

void PmeTcp::send_ack(uint32_t conn) {
  Mbp2Nic& u = nic_;
  Conn& T = conns_.at(conn);
  T.unacked = 0;
  T.delack = 0;
  // The ACK says where the receive stood when the routine decided to send it (an ACK for each
  // segment out of order, not one for all of them once the handler runs).
  const uint32_t inc = nic_.sys_->incarnation(nic_.node_), ack = rcv_nxt(conn);
  const uint16_t wnd = window(conn);
  u.pme_->run("tcp_ack", Pme::kNormal, false, u.pme_->instr_ps(nic_.m_.ip_header_instr), [this, conn, inc, ack, wnd] {
    if (!nic_.sys_->up(nic_.node_) || nic_.sys_->incarnation(nic_.node_) != inc) return;
    Mbp2Nic& u = nic_;
    Conn& T = conns_.at(conn);
    Datagram d = datagram(conn, T.sent_end(), ack, wnd);
    d.flags = kTcpAck;
    u.ip.tcp_acks_tx->inc();
    const uint32_t dst = T.peer;
    nic_.nic_transmit(dst, build_inet(d, nullptr, 0), [this, dst](std::vector<uint8_t>&& b) { nic_.to_wire(dst, std::move(b)); });
  });
}

}  // namespace mbpsim::mbp2
