// TCP's output (4.3BSD tcp_output): what to send and when, RSTs, and the segments' hand-off in
// the order they were decided.
#include "models/sockets/tcp.h"

#include <algorithm>
#include <cmath>

#include "models/core/error.h"
#include "models/core/module_tree.h"
#include "models/host/os.h"
#include "models/sockets/inet_stack.h"
#include "models/sockets/tcp_internal.h"

namespace mbpsim::sockets {

using tcp::Event;
using tcp::State;
using namespace tcp;
using namespace tcp_internal;

// ------------------------------------------------------------------ output

uint16_t Tcp::rcv_window(const Tcb& t) const {
  uint32_t win = rcv_space(t);
  if (win < recvspace_ / 4 && win < mss_) win = 0;  // receiver silly-window avoidance
  if (seq_lt(t.rcv_nxt + win, t.rcv_adv)) win = t.rcv_adv - t.rcv_nxt;  // never shrink the window offered
  return static_cast<uint16_t>(std::min(win, kMaxWin));
}

void Tcp::output(Tcb& t, bool intr, std::function<void()> k) {
  t.want_output = false;
  auto segs = std::make_shared<std::deque<Seg>>();
  const uint32_t cc = static_cast<uint32_t>(t.sndbuf.size());
  for (bool entry = true;; entry = false) {
    const bool syn = (t.state == State::SynSent || t.state == State::SynRcvd) && t.snd_nxt == t.iss;
    const bool sync = connected(t.state);
    uint32_t off = t.snd_nxt - t.snd_una;
    uint32_t win = std::min(t.snd_wnd, t.cwnd);
    if (t.force && win == 0) win = 1;
    int64_t avail = sync ? static_cast<int64_t>(std::min(cc, win)) - off : 0;
    uint32_t len = avail > 0 ? static_cast<uint32_t>(avail) : 0;
    bool sendalot = false;
    if (len > mss_) {
      len = mss_;
      sendalot = true;
    }
    bool wput_go = false;  // Solaris's tcp_wput_data sends this data
    if (c_.solaris_output && len > 0 && !t.force) {
      const uint32_t usable = static_cast<uint32_t>(avail);  // min(window, unsent) - outstanding
      const uint32_t naglim = t.nodelay ? 1 : mss_;
      if (entry && usable < mss_ && usable < naglim && naglim > t.last_sent_len && t.snd_nxt != t.snd_una)
        len = 0;  // Nagle's test, once, as tcp_wput_data is entered
      else if (usable < mss_ && usable < t.max_sndwnd / 2 && cc - off > usable)
        len = 0;  // sender silly-window avoidance: the window, not the data, makes it short
      else
        len = mblk_fit(t, off, len);  // whole data blocks, or an MSS of a longer one
      wput_go = len > 0;
      sendalot = wput_go && usable > len;
    }
    const bool fin_state = t.state == State::FinWait1 || t.state == State::Closing || t.state == State::LastAck;
    const bool fin = fin_state && off + len == cc;
    bool go = syn || t.acknow || fin || wput_go;
    if (len > 0 && !wput_go) {
      const bool idle = t.snd_max == t.snd_una;
      if (len == mss_) go = true;
      else if ((idle || t.nodelay) && off + len >= cc) go = true;  // Nagle's rule and TCP_NODELAY
      else if (t.force) go = true;
      else if (t.max_sndwnd > 0 && len >= t.max_sndwnd / 2) go = true;
      else if (seq_lt(t.snd_nxt, t.snd_max)) go = true;  // a retransmission
    }
    bool winupd = false;
    if (sync && !go && !c_.streams_rcv_flow) {  // a window update, when the user's reads opened it enough
      const int64_t adv = static_cast<int64_t>(std::min(kMaxWin, rcv_space(t))) - static_cast<int64_t>(offered(t));
      const int64_t two_segs = 2 * static_cast<int64_t>(mss_), hiwat = recvspace_;
      const bool enough = c_.tahoe_window_update ? (t.rcvbuf.empty() && adv >= two_segs) || 100 * adv >= 35 * hiwat
                                                 : adv >= two_segs || 2 * adv >= hiwat;
      if (enough) go = winupd = true;
    }
    if (!go) {
      // tcp_setpersist: data waits, nothing is outstanding and the window is closed
      if (sync && cc > 0 && !t.rexmt_on) {
        t.persist = true;
        arm_rexmt(t);
      }
      break;
    }
    // Build the segment.
    uint8_t flags = syn ? kSyn : 0;
    if (t.state != State::SynSent) flags |= kAck;
    if (fin) flags |= kFin;
    // PSH: BSD's on the segment that empties the send buffer; Solaris's tcp_wput_data sets it
    // on the segment that uses up what may go now (the window's room or the unsent data,
    // whichever is less: 'usable'), which is what wakes a reader waiting on the co queue.
    if (len > 0 && (c_.solaris_output ? avail <= static_cast<int64_t>(mss_) : off + len == cc)) flags |= kPsh;
    const uint32_t seq = t.snd_nxt;
    mbp2::Datagram d;
    d.proto = mbp2::kIpProtoTcp;
    d.src_node = node_;
    d.dst_node = t.rnode;
    d.src_port = t.lport;
    d.dst_port = t.rport;
    d.seq = seq;
    d.ack = (flags & kAck) ? t.rcv_nxt : 0;
    d.flags = flags;
    d.window = rcv_window(t);
    d.ip_id = ip_.next_ip_id();
    // (off may pass the buffer's end when the FIN or a SYN took sequence space; len is 0 then)
    std::vector<uint8_t> data;
    if (len > 0) data.assign(t.sndbuf.begin() + off, t.sndbuf.begin() + off + len);
    std::vector<uint8_t> frame = mbp2::build_inet(d, data.data(), len);
    // (with sockets.tcp_cksum_in_copy the data was summed as send() copied it in)
    const uint64_t summed = mbp2::kTcpHeader + (c_.tcp_cksum_in_copy ? 0 : len);
    // the header mbuf and m_copy's of the data (one per send-buffer mbuf it spans)
    const uint32_t buffers = 1 + (len == 0 ? 0 : c_.mbuf_accounting ? t.snd_mb.span(off, len) : 1);
    const uint64_t ps = os_.instr_ps(c_.tcp_output_instr) + ip_.cksum_ps(summed) + ip_.frame_out_ps(frame.size(), buffers);
    // Counters, and the send state advanced as tcp_output does when it hands the segment on.
    segs_out_.inc();
    if (len > 0) {
      t.last_sent_len = len;
      data_segs_out_.inc();
      data_bytes_out_.inc(len);
      if (seq_lt(seq, t.snd_max)) rexmt_segs_.inc();
    } else if (!syn && !fin) {
      acks_out_.inc();
      if (winupd) winupd_out_.inc();
    }
    if (t.force) {
      t.force = false;
      sendalot = false;
    }
    t.snd_nxt += len + (syn ? 1 : 0) + (fin ? 1 : 0);
    if (fin) t.fin_sent = true;
    if (seq_gt(t.snd_nxt, t.snd_max)) {
      t.snd_max = t.snd_nxt;
      if (!t.timing && (len > 0 || syn)) {
        t.timing = true;
        t.rtseq = seq;
        t.rtt_start = cal_.now_ps();
      }
    }
    if ((!t.rexmt_on || t.persist) && t.snd_nxt != t.snd_una) {  // something outstanding: the retransmission timer
      if (t.persist) t.rxtshift = 0;
      cancel_rexmt(t);
      arm_rexmt(t);
    }
    if (seq_gt(t.rcv_nxt + d.window, t.rcv_adv)) t.rcv_adv = t.rcv_nxt + d.window;
    ack_sent(t);
    segs->push_back({t.fd, std::move(frame), ps, next_ticket_++});
    if (!sendalot) break;
  }
  if (c_.streams_snd_flow) snd_flow(t);
  hand_on(segs, t.rnode, intr, std::move(k));
}

// The segments tcp_output built, handed to IP one after another, each after its CPU time (at
// interrupt level or in the calling process); then `k`.
void Tcp::hand_on(std::shared_ptr<std::deque<Seg>> q, uint32_t dst, bool intr, std::function<void()> k) {
  if (q->empty()) {
    if (k) k();
    return;
  }
  const uint64_t ps = q->front().ps;
  tx_ps_.inc(ps);
  auto next = [this, q, dst, intr, k = std::move(k)]() mutable {
    emit(q->front().ticket, std::move(q->front().frame), dst, q->front().fd);
    q->pop_front();
    hand_on(q, dst, intr, std::move(k));
  };
  if (intr) cpu_.interrupt(ps, std::move(next));
  else os_.kernel(ps, std::move(next));
}

void Tcp::respond_rst(const mbp2::Parsed& p) {
  // RFC 793: a RST for a segment that belongs to no connection; its sequence is the segment's
  // ACK if it had one, otherwise zero with an ACK of what the segment occupied.
  mbp2::Datagram d;
  d.proto = mbp2::kIpProtoTcp;
  d.src_node = node_;
  d.dst_node = p.d.src_node;
  d.src_port = p.d.dst_port;
  d.dst_port = p.d.src_port;
  if (p.d.flags & kAck) {
    d.seq = p.d.ack;
    d.flags = kRst;
  } else {
    d.seq = 0;
    d.ack = p.d.seq + p.payload_len + ((p.d.flags & kSyn) ? 1 : 0) + ((p.d.flags & kFin) ? 1 : 0);
    d.flags = kRst | kAck;
  }
  d.window = 0;
  d.ip_id = ip_.next_ip_id();
  std::vector<uint8_t> frame = mbp2::build_inet(d, nullptr, 0);
  const uint64_t ps = os_.instr_ps(c_.tcp_output_instr) + ip_.cksum_ps(mbp2::kTcpHeader) + ip_.frame_out_ps(frame.size(), 1);
  rst_out_.inc();
  segs_out_.inc();
  tx_ps_.inc(ps);
  const uint32_t dst = d.dst_node;
  const uint64_t ticket = next_ticket_++;
  cpu_.interrupt(ps, [this, ticket, f = std::move(frame), dst]() mutable { emit(ticket, std::move(f), dst, -1); });
}

void Tcp::emit(uint64_t ticket, std::vector<uint8_t>&& frame, uint32_t dst, int fd) {
  // tcp_output decides and queues a segment in one critical section (splnet), so segments reach
  // the interface in the order they were decided even when a call's output and an interrupt's
  // finish their CPU time in the other order: a frame waits for those decided before it.
  held_.emplace(ticket, Held{std::move(frame), dst, fd});
  while (!held_.empty() && held_.begin()->first == next_out_) {
    Held& h = held_.begin()->second;
    if (!ip_.transmit(std::move(h.frame), h.dst))
      if (Tcb* t = h.fd >= 0 ? tcb(h.fd) : nullptr) {  // tcp_quench; the segment is resent as a lost one
        t->cwnd = mss_;
        quenches_.inc();
      }
    held_.erase(held_.begin());
    ++next_out_;
  }
}

}  // namespace mbpsim::sockets
