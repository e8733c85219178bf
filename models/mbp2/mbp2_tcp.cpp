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
#include "models/mbp2/mbp2_cards.h"

namespace mbpsim::mbp2 {

namespace {
// Sequence-space comparisons (RFC 793: modulo 2^32).
bool seq_lt(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }
bool seq_le(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) <= 0; }
constexpr uint64_t kRtoMaxPs = 60'000'000'000'000ull;  // RFC 6298 2.5: at least 60 s
}  // namespace

uint32_t Mbp2Nic::tcp_rcv_nxt(uint32_t conn) const {
  return kli_->load32(kConnTable + conn * kConnBytes + 24);
}

uint16_t Mbp2Nic::tcp_window(uint32_t conn) const {
  const Mbp2Nic& u = *this;
  const Tcp& T = u.tcp.at(conn);
  if (T.rx_slots == 0 || T.rx_slot_bytes <= kSlotHeader) return 0xffff;  // (no ring known)
  const uint32_t head = u.kli_->load32(kConnTable + conn * kConnBytes + 28);
  const uint32_t used = std::min(T.rx_slots, head - T.rx_tail);
  const uint64_t room = static_cast<uint64_t>(T.rx_slots - used) * (T.rx_slot_bytes - kSlotHeader);
  return static_cast<uint16_t>(std::min<uint64_t>(room, 0xffff));
}

Datagram Mbp2Nic::tcp_datagram(uint32_t conn, uint32_t seq, uint32_t ack, uint16_t window) {
  Mbp2Nic& u = *this;
  const Tcp& T = u.tcp.at(conn);
  Datagram d;
  d.proto = kIpProtoTcp;
  d.src_node = node_;
  d.dst_node = T.peer;
  d.src_port = T.lport;
  d.dst_port = T.rport;
  d.ip_id = ++u.ip_id;
  d.seq = seq;
  d.ack = ack;
  d.window = window;
  return d;
}

uint32_t Mbp2Nic::tcp_unacked(uint16_t local_port, uint32_t remote_node, uint16_t remote_port) const {
  const int64_t c = find_conn(kIpProtoTcp, local_port, remote_node, remote_port);
  if (c < 0) return 0;
  auto it = tcp.find(static_cast<uint32_t>(c));
  if (it == tcp.end() || it->second.q.empty()) return 0;
  const TcpSeg& last = it->second.q.back();
  return last.seq + last.len - it->second.una;
}

void Mbp2Nic::tcp_queue(uint32_t conn, uint32_t seq, uint32_t len, int32_t img) {
  Tcp& T = tcp.at(conn);
  TcpSeg s;
  s.seq = seq;
  s.len = len;
  s.img = img;  // the fetch's hold on the image is kept until the segment is acknowledged
  T.q.push_back(s);
  tcp_output(conn);
}

void Mbp2Nic::tcp_output(uint32_t conn) {
  Mbp2Nic& u = *this;
  Tcp& T = u.tcp.at(conn);
  const uint32_t win = std::min(T.wnd, T.cwnd);
  std::vector<uint32_t> seqs;
  while (T.sent < T.q.size()) {
    TcpSeg& s = T.q[T.sent];
    if (s.seq + s.len - T.una > win) break;
    s.pass = T.pass;
    seqs.push_back(s.seq);
    ++T.sent;
  }
  if (T.sent < T.q.size() && seqs.empty() && T.sent == 0) u.ip.tcp_window_waits->inc();
  if (seqs.empty()) {
    if (T.sent == 0 && !T.q.empty() && !T.timer) tcp_arm(conn);  // the persist timer: the window is shut
    return;
  }
  // The PME builds each segment's headers (the CSU-T's sum of the payload taken once, at the
  // fetch; a segment sent again has its header words summed anew) and hands it to the LDMA.
  const uint32_t inc = sys_->incarnation(node_);
  const uint64_t dur = u.pme_->instr_ps(m_.ip_header_instr * static_cast<double>(seqs.size()));  // (before seqs moves)
  u.pme_->run("tcp_output", Pme::kNormal, false, dur,
             [this, conn, inc, pass = T.pass, seqs = std::move(seqs)] {
               if (!sys_->up(node_) || sys_->incarnation(node_) != inc) return;
               Mbp2Nic& u = *this;
               Tcp& T = u.tcp.at(conn);
               for (uint32_t seq : seqs) {
                 auto it = std::find_if(T.q.begin(), T.q.end(), [seq](const TcpSeg& s) { return s.seq == seq; });
                 // Acknowledged meanwhile (a copy sent before reached the peer), or picked again by
                 // a go-back since: the later pass sends it.
                 if (it == T.q.end() || it->pass != pass) continue;
                 TcpSeg& s = *it;
                 const bool first = s.tx++ == 0;
                 if (!first) u.ip.tcp_retransmits->inc();
                 s.sent_ps = cal_.now_ps();
                 const Datagram d = tcp_datagram(conn, s.seq, tcp_rcv_nxt(conn), tcp_window(conn));
                 const std::vector<uint8_t> payload = s.len ? u.em_->read(image_offset(s.img), s.len) : std::vector<uint8_t>{};
                 std::vector<uint8_t> f = build_inet(d, payload.data(), s.len);
                 if (first && u.csu_) u.csu_->transmit(f);
                 T.unacked = 0;  // the segment carries the ACK
                 T.delack = 0;
                 ++u.dg_held[static_cast<uint32_t>(s.img)];  // until the LDMA has read the frame from it
                 const int32_t img = s.img;
                 const uint32_t dst = T.peer;
                 nic_transmit(dst, std::move(f), [this, dst, img, inc](std::vector<uint8_t>&& b) {
                   image_done(img, inc);
                   to_wire(dst, std::move(b));  // (not sent: the timer brings it again)
                 });
               }
               if (!T.timer && T.sent) tcp_arm(conn);
             });
}

void Mbp2Nic::tcp_arm(uint32_t conn) {
  Mbp2Nic& u = *this;
  Tcp& T = u.tcp.at(conn);
  const uint64_t serial = T.timer = ++timer_serial_;
  const uint32_t inc = sys_->incarnation(node_);
  cal_.after(T.rto, [this, conn, serial, inc] {
    if (!sys_->up(node_) || sys_->incarnation(node_) != inc) return;
    auto it = tcp.find(conn);
    if (it == tcp.end() || it->second.timer != serial) return;
    it->second.timer = 0;
    tcp_timeout(conn);
  });
}

void Mbp2Nic::tcp_timeout(uint32_t conn) {
  Mbp2Nic& u = *this;
  Tcp& T = u.tcp.at(conn);
  if (T.q.empty()) return;
  T.rto = std::min(2 * T.rto, kRtoMaxPs);  // (RFC 6298 5.5; kept until a new sample)
  if (T.sent == 0) {  // the persist timer: probe the shut window with the first waiting segment
    u.ip.tcp_probes->inc();
    const uint32_t wnd = T.wnd, cwnd = T.cwnd;
    T.wnd = T.cwnd = T.q[0].seq + T.q[0].len - T.una;  // room for that one alone, for this call
    tcp_output(conn);
    T.wnd = wnd;
    T.cwnd = cwnd;
    return;
  }
  u.ip.tcp_timeouts->inc();
  if (++T.backoffs > m_.tcp_max_retries) return tcp_abort(conn);
  // RFC 5681 3.1: ssthresh to half the flight, the congestion window to one segment.
  T.ssthresh = std::max((T.sent_end() - T.una) / 2, 2 * mss());
  T.cwnd = mss();
  T.dupacks = 0;
  T.recovering = false;
  ++T.pass;
  T.sent = 0;  // go back to the oldest unacknowledged segment
  tcp_output(conn);
}

void Mbp2Nic::tcp_abort(uint32_t conn) {
  Mbp2Nic& u = *this;
  Tcp& T = u.tcp.at(conn);
  u.ip.tcp_aborts->inc();
  const uint32_t inc = sys_->incarnation(node_);
  for (const TcpSeg& s : T.q) image_done(s.img, inc);
  // What the user queued after is numbered on; the peer, still expecting the lost bytes, drops
  // it (a connection given up is the OS's to set up again).
  T.una = u.kli_->load32(kConnTable + conn * kConnBytes + 16);
  T.q.clear();
  T.sent = 0;
  T.timer = 0;
  T.backoffs = 0;
  T.dupacks = 0;
  T.recovering = false;
  fw_run_pollers(cal_.now_ps());
}

void Mbp2Nic::tcp_ack_in(uint32_t conn, const Datagram& d, uint32_t len) {
  Mbp2Nic& u = *this;
  Tcp& T = u.tcp.at(conn);
  if (!(d.flags & kTcpAck)) return;
  if (len == 0) u.ip.tcp_acks_rx->inc();
  // An acceptable ACK covers no more than the highest segment sent (after a go-back, copies
  // sent before may still be acknowledged).
  uint32_t highest = T.una;
  for (const TcpSeg& s : T.q)
    if (s.tx) highest = seq_lt(highest, s.seq + s.len) ? s.seq + s.len : highest;
  if (seq_lt(T.una, d.ack) && seq_le(d.ack, highest)) {
    // New data acknowledged: its images go back to the PGE.
    const uint32_t inc = sys_->incarnation(node_);
    uint32_t acked = 0;
    uint64_t sample = 0;
    bool sampled = false;
    while (!T.q.empty() && seq_le(T.q.front().seq + T.q.front().len, d.ack)) {
      const TcpSeg& s = T.q.front();
      if (s.tx == 1) {
        sample = cal_.now_ps() - s.sent_ps;
        sampled = true;
      }
      acked += s.len;
      image_done(s.img, inc);
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
      T.rto = std::min(std::max(T.srtt + 4 * T.rttvar, static_cast<uint64_t>(m_.tcp_rto_min_us * 1e6)), kRtoMaxPs);
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
    if (T.sent) tcp_arm(conn);
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
        tcp_arm(conn);
      }
    }
    const bool opened = d.window > T.wnd;
    T.wnd = d.window;  // a window update
    if (opened && T.sent == 0) T.timer = 0;  // (the persist timer: no longer needed)
  }
  tcp_output(conn);
}

void Mbp2Nic::tcp_received(uint32_t conn, bool delivered) {
  Mbp2Nic& u = *this;
  Tcp& T = u.tcp.at(conn);
  if (!delivered || ++T.unacked >= m_.tcp_ack_every) return tcp_send_ack(conn);
  if (T.delack) return;
  const uint64_t serial = T.delack = ++timer_serial_;
  const uint32_t inc = sys_->incarnation(node_);
  cal_.after(static_cast<uint64_t>(m_.tcp_delack_us * 1e6), [this, conn, serial, inc] {
    if (!sys_->up(node_) || sys_->incarnation(node_) != inc) return;
    auto it = tcp.find(conn);
    if (it == tcp.end() || it->second.delack != serial) return;
    tcp_send_ack(conn);
  });
}

void Mbp2Nic::tcp_send_ack(uint32_t conn) {
  Mbp2Nic& u = *this;
  Tcp& T = u.tcp.at(conn);
  T.unacked = 0;
  T.delack = 0;
  // The ACK says where the receive stood when the routine decided to send it (an ACK for each
  // segment out of order, not one for all of them once the handler runs).
  const uint32_t inc = sys_->incarnation(node_), ack = tcp_rcv_nxt(conn);
  const uint16_t window = tcp_window(conn);
  u.pme_->run("tcp_ack", Pme::kNormal, false, u.pme_->instr_ps(m_.ip_header_instr), [this, conn, inc, ack, window] {
    if (!sys_->up(node_) || sys_->incarnation(node_) != inc) return;
    Mbp2Nic& u = *this;
    Tcp& T = u.tcp.at(conn);
    Datagram d = tcp_datagram(conn, T.sent_end(), ack, window);
    d.flags = kTcpAck;
    u.ip.tcp_acks_tx->inc();
    const uint32_t dst = T.peer;
    nic_transmit(dst, build_inet(d, nullptr, 0), [this, dst](std::vector<uint8_t>&& b) { to_wire(dst, std::move(b)); });
  });
}

}  // namespace mbpsim::mbp2
