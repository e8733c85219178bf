// TCP's input (4.3BSD tcp_input): the table's actions for each event, and a segment's arrival.
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

// ------------------------------------------------------------------ actions

State Tcp::a_connect(Tcb& t, const mbp2::Parsed*, const std::vector<uint8_t>*) {
  t.iss = next_iss_;
  next_iss_ += 64000;  // BSD's TCP_ISSINCR / 2 per connection
  t.snd_una = t.snd_nxt = t.snd_max = t.iss;
  t.cwnd = initial_cwnd();
  t.ssthresh = kMaxWin;
  return State::SynSent;  // output sends the SYN
}

State Tcp::a_listen(Tcb&, const mbp2::Parsed*, const std::vector<uint8_t>*) { return State::Listen; }

State Tcp::a_close_now(Tcb& t, const mbp2::Parsed*, const std::vector<uint8_t>*) {
  cancel_rexmt(t);
  t.error_set = true;
  t.error = Errno::NotConn;
  wake_all(t);
  return State::Closed;
}

State Tcp::a_close_fin(Tcb& t, const mbp2::Parsed*, const std::vector<uint8_t>*) {
  // output sends the FIN after the send buffer's data (FIN_WAIT_1, CLOSING and LAST_ACK are the
  // states of a side that has closed and whose FIN is not yet acknowledged)
  return t.state == State::CloseWait ? State::LastAck : State::FinWait1;
}

State Tcp::a_syn_listen(Tcb& l, const mbp2::Parsed* p, const std::vector<uint8_t>*) {
  const int fd = socket();
  Tcb& t = *tcbs_[static_cast<size_t>(fd)];
  t.listener = l.fd;
  t.lport = l.lport;
  t.rnode = p->d.src_node;
  t.rport = p->d.src_port;
  t.irs = p->d.seq;
  t.rcv_nxt = t.rcv_adv = p->d.seq + 1;
  t.iss = next_iss_;
  next_iss_ += 64000;
  t.snd_una = t.snd_nxt = t.snd_max = t.iss;
  t.snd_wnd = t.max_sndwnd = p->d.window;
  t.snd_wl1 = p->d.seq;
  t.cwnd = initial_cwnd();
  t.ssthresh = kMaxWin;
  t.state = State::SynRcvd;
  output(t, true);  // the SYN|ACK
  return State::Listen;
}

State Tcp::a_synack(Tcb& t, const mbp2::Parsed* p, const std::vector<uint8_t>*) {
  if (!(p->d.flags & kAck) || p->d.ack != t.iss + 1) {  // not an answer to our SYN
    respond_rst(*p);
    return t.state;
  }
  t.irs = p->d.seq;
  t.rcv_nxt = t.rcv_adv = p->d.seq + 1;
  t.snd_una = p->d.ack;
  if (seq_lt(t.snd_nxt, t.snd_una)) t.snd_nxt = t.snd_una;
  t.snd_wnd = t.max_sndwnd = p->d.window;
  t.snd_wl1 = p->d.seq;
  t.snd_wl2 = p->d.ack;
  cancel_rexmt(t);
  if (t.timing) rtt_sample(t);
  t.acknow = true;
  conns_.inc();
  os_.wakeup(chan(t.fd, kChanConn));
  return State::Established;
}

State Tcp::a_synrcvd_ack(Tcb& t, const mbp2::Parsed* p, const std::vector<uint8_t>* f) {
  if (p->d.ack != t.iss + 1) {
    respond_rst(*p);
    return t.state;
  }
  t.snd_una = p->d.ack;
  cancel_rexmt(t);
  if (t.timing) rtt_sample(t);
  conns_.inc();
  if (Tcb* l = tcb(t.listener); l && l->state == State::Listen) {
    l->accept_q.push_back(t.fd);
    os_.wakeup(chan(l->fd, kChanAccept));
    os_.wakeup(ip_.select_chan());  // soisconnected's sorwakeup of the listener: selwakeup
  }
  t.state = State::Established;
  return a_segment(t, p, f);  // its data and FIN, if any
}

State Tcp::a_reack(Tcb& t, const mbp2::Parsed*, const std::vector<uint8_t>*) {
  if (t.state == State::SynRcvd) t.snd_nxt = t.iss;  // the peer's SYN again: our SYN|ACK again
  t.acknow = true;
  return t.state;
}

State Tcp::a_reset(Tcb& t, const mbp2::Parsed*, const std::vector<uint8_t>*) {
  drop(t, t.state == State::SynSent ? Errno::ConnRefused : Errno::ConnReset);
  return State::Closed;
}

State Tcp::a_rexmt(Tcb& t, const mbp2::Parsed*, const std::vector<uint8_t>*) {
  if (t.persist) {  // tcp_timers' TCPT_PERSIST: a one-byte probe of the zero window, then again later
    persist_probes_.inc();
    t.persist = false;
    t.force = true;
    ++t.rxtshift;
    return t.state;
  }
  if (++t.rxtshift > c_.tcp_max_rexmt) {
    drop(t, Errno::TimedOut);
    return State::Closed;
  }
  timeouts_.inc();
  collapse_window(t);
  t.dupacks = 0;
  if (t.state == State::SynRcvd || t.state == State::SynSent) t.snd_nxt = t.iss;
  return t.state;
}

State Tcp::a_delack(Tcb& t, const mbp2::Parsed*, const std::vector<uint8_t>*) {
  if (!t.delack) return t.state;
  t.delack = false;
  t.acknow = true;
  delacks_.inc();
  return t.state;
}

State Tcp::a_twomsl(Tcb& t, const mbp2::Parsed*, const std::vector<uint8_t>*) {
  cancel_rexmt(t);
  return State::Closed;
}

// tcp_input's processing of an ACK-bearing segment in a synchronized state: the ACK, the window,
// the data, the FIN, then the state's next step.
State Tcp::a_segment(Tcb& t, const mbp2::Parsed* p, const std::vector<uint8_t>* f) {
  const mbp2::Datagram& d = p->d;
  uint32_t seq = d.seq;
  const uint8_t* data = f->data() + p->payload_off;
  uint32_t len = p->payload_len;
  bool fin = d.flags & kFin;
  State next = t.state;

  // Trim what lies below rcv_nxt (a duplicate) and beyond the receive window.
  if (seq_lt(seq, t.rcv_nxt)) {
    const uint32_t dup = t.rcv_nxt - seq;
    if (dup > len || (dup == len && !fin) || (dup == len && fin && t.fin_rcvd)) {
      if (len > 0 || fin) {
        dup_in_.inc();
        t.acknow = true;
      }
      len = 0;
      fin = false;
      seq = t.rcv_nxt;
    } else {
      data += dup;
      len -= dup;
      seq = t.rcv_nxt;
      t.acknow = true;
    }
  }
  const uint32_t wnd_end = t.rcv_nxt + std::max(rcv_space(t), offered(t));  // what we advertised stays open
  if (seq_gt(seq + len, wnd_end)) {
    const uint32_t over = seq + len - wnd_end;
    len = over >= len ? 0 : len - over;
    fin = false;
    t.acknow = true;
  }

  // The ACK.
  const uint32_t ack = d.ack;
  if (seq_le(ack, t.snd_una)) {
    if (len == 0 && !fin && d.window == t.snd_wnd && ack == t.snd_una && t.snd_max != t.snd_una) {
      dupacks_in_.inc();
      if (++t.dupacks == c_.tcp_dupack_thresh) {  // fast retransmit (4.3BSD-Tahoe): as a timeout, without waiting
        fast_rexmt_.inc();
        cancel_rexmt(t);
        collapse_window(t);
        t.want_output = true;
      }
    } else {
      t.dupacks = 0;
    }
  } else if (seq_gt(ack, t.snd_max)) {  // acknowledges what was never sent: ACK and drop
    t.acknow = true;
    return t.state;
  } else {
    uint32_t acked = ack - t.snd_una;
    t.dupacks = 0;
    if (t.timing && seq_gt(ack, t.rtseq)) rtt_sample(t);
    t.rxtshift = 0;
    if (ack == t.snd_max) {
      cancel_rexmt(t);
      t.want_output = true;
    } else if (!t.persist) {
      cancel_rexmt(t);
      arm_rexmt(t);
    }
    // slow start below ssthresh, congestion avoidance above
    const uint32_t incr = t.cwnd > t.ssthresh ? std::max<uint32_t>(1, mss_ * mss_ / t.cwnd) : mss_;
    t.cwnd = std::min(t.cwnd + incr, kMaxWin);
    bool fin_acked = false;
    if (acked > t.sndbuf.size()) {
      t.sndbuf.clear();
      t.snd_mb.clear();
      fin_acked = t.fin_sent;
    } else {
      t.sndbuf.erase(t.sndbuf.begin(), t.sndbuf.begin() + acked);
      t.snd_mb.drop(acked);
    }
    os_.wakeup(chan(t.fd, kChanSend));  // sowwakeup
    t.snd_una = ack;
    while (!t.mblk_ends.empty() && seq_le(t.mblk_ends.front(), ack)) t.mblk_ends.pop_front();
    if (seq_lt(t.snd_nxt, t.snd_una)) t.snd_nxt = t.snd_una;
    if (fin_acked) {
      if (next == State::FinWait1) next = State::FinWait2;
      else if (next == State::Closing) next = enter_time_wait(t);
      else if (next == State::LastAck) {
        cancel_rexmt(t);
        return State::Closed;
      }
    }
  }

  // The peer's window (RFC 793's SND.WL1/SND.WL2 rule: only a newer segment updates it).
  // Taking it calls tcp_output afterwards whether or not its size changed (4.3BSD's step6 sets
  // needoutput): an ACK that frees part of a constant window lets more data go.
  if (seq_lt(t.snd_wl1, d.seq) || (t.snd_wl1 == d.seq && (seq_lt(t.snd_wl2, ack) || (t.snd_wl2 == ack && d.window > t.snd_wnd)))) {
    t.want_output = true;
    t.snd_wnd = d.window;
    t.snd_wl1 = d.seq;
    t.snd_wl2 = ack;
    t.max_sndwnd = std::max(t.max_sndwnd, t.snd_wnd);
  }

  // The data: in order onto the receive buffer (ACK delayed); ahead of rcv_nxt held for
  // reassembly and a gap ACKed at once.
  const bool receiving = next == State::Established || next == State::FinWait1 || next == State::FinWait2;
  if (len > 0 && receiving) {
    if (seq == t.rcv_nxt && t.reass.empty()) {
      if (c_.streams_rcv_flow && t.rcvbuf.size() >= recvspace_) {  // canput fails: the window shrinks
        t.rwnd -= std::min(t.rwnd, len);
        t.qwantw = true;
      }
      t.rcvbuf.insert(t.rcvbuf.end(), data, data + len);
      t.rcv_mb.append(MbufAccount::rx_chain(mbuf::kTcpIpHdr + p->payload_len, len, c_.driver_rx_copy_max));
      t.rcv_nxt += len;
      ack_in_order(t, len);
      sorwakeup(t);
    } else {
      if (seq != t.rcv_nxt) ooo_in_.inc();
      auto [it, fresh] = t.reass.emplace(seq, std::vector<uint8_t>(data, data + len));
      if (!fresh && it->second.size() < len) it->second.assign(data, data + len);
      t.acknow = true;
      bool moved = false;
      while (!t.reass.empty() && seq_le(t.reass.begin()->first, t.rcv_nxt)) {
        auto b = t.reass.begin();
        const uint32_t skip = t.rcv_nxt - b->first;
        if (skip < b->second.size()) {
          t.rcvbuf.insert(t.rcvbuf.end(), b->second.begin() + skip, b->second.end());
          t.rcv_mb.append(MbufAccount::rx_chain(mbuf::kTcpIpHdr + static_cast<uint32_t>(b->second.size()), static_cast<uint32_t>(b->second.size()) - skip, c_.driver_rx_copy_max));
          t.rcv_nxt += static_cast<uint32_t>(b->second.size()) - skip;
          moved = true;
        }
        t.reass.erase(b);
      }
      if (moved) sorwakeup(t);
    }
  }

  // The FIN, once everything before it is in.
  if (fin && receiving && !t.fin_rcvd && seq + len == t.rcv_nxt) {
    t.fin_rcvd = true;
    ++t.rcv_nxt;
    t.acknow = true;
    sorwakeup(t);
    if (next == State::Established) next = State::CloseWait;
    else if (next == State::FinWait1) next = State::Closing;
    else if (next == State::FinWait2) next = enter_time_wait(t);
  } else if (fin && t.state == State::TimeWait) {
    t.acknow = true;
  }
  if (t.delack) schedule_delack(t);
  return next;
}

State Tcp::enter_time_wait(Tcb& t) {
  cancel_rexmt(t);
  const uint64_t gen = ++t.twomsl_gen;
  const int fd = t.fd;
  cal_.at(cal_.now_ps() + static_cast<uint64_t>(std::llround(2 * c_.tcp_msl_s * 1e12)), [this, fd, gen] {
    Tcb* t = tcb(fd);
    if (t && t->twomsl_gen == gen) dispatch(*t, Event::TwoMsl);
  });
  return State::TimeWait;
}

// ------------------------------------------------------------------ input

uint64_t Tcp::input_ps(const std::vector<uint8_t>& frame, bool& fast, bool summed) {
  mbp2::Parsed p;
  const uint64_t ck = summed ? ip_.rx_cksum_ps(frame.size()) : 0;
  fast = c_.tcp_header_prediction && mbp2::parse_inet(frame, p, false) == mbp2::InetError::None && predicted(p);
  const uint64_t ps = os_.instr_ps(fast ? c_.tcp_predict_instr : c_.tcp_input_instr) + ck;
  input_ps_.inc(ps);
  return ps;
}

// Van Jacobson's header prediction: the next expected segment of an established connection,
// with nothing but ACK (and PSH) set and the window unchanged, that is either a pure ACK for
// new data or pure in-order data that fits.
bool Tcp::predicted(const mbp2::Parsed& p) const {
  const Tcb* t = const_cast<Tcp*>(this)->lookup(p.d.dst_port, p.d.src_node, p.d.src_port);
  if (!t || t->state != State::Established) return false;
  const mbp2::Datagram& d = p.d;
  if ((d.flags & (kSyn | kFin | kRst)) || !(d.flags & kAck) || d.seq != t->rcv_nxt || d.window != t->snd_wnd ||
      t->snd_nxt != t->snd_max)
    return false;
  if (p.payload_len == 0) return seq_gt(d.ack, t->snd_una) && seq_le(d.ack, t->snd_max) && t->cwnd >= t->snd_wnd;
  return d.ack == t->snd_una && t->reass.empty() && p.payload_len <= rcv_space(*t);
}

void Tcp::input(std::vector<uint8_t>&& frame, bool fast) {
  input_at(std::move(frame), fast, true, true, {});
}

void Tcp::input_at(std::vector<uint8_t>&& frame, bool fast, bool intr, bool drain, std::function<void()> k) {
  mbp2::Parsed p;
  if (mbp2::parse_inet(frame, p) != mbp2::InetError::None || p.d.proto != mbp2::kIpProtoTcp || p.d.dst_node != node_) {
    bad_.inc();
    if (k) k();
    return;
  }
  Tcb* t = lookup(p.d.dst_port, p.d.src_node, p.d.src_port);
  // Solaris: a segment tcp_rput does not queue drains the co queue first (tcp_co_drain), so
  // that TCP takes the connection's segments in their order.
  if (t && !t->co.empty() && drain) {
    auto keep = std::make_shared<std::vector<uint8_t>>(std::move(frame));  // (only while a queue drains)
    return co_process(t->fd, false, 0, [this, keep, fast, k = std::move(k)]() mutable { input_at(std::move(*keep), fast, true, false, std::move(k)); });
  }
  segs_in_.inc();
  if (fast) predicted_.inc();
  const uint8_t fl = p.d.flags;
  Event e;
  if (fl & kRst) e = Event::Rst;
  else if ((fl & kSyn) && (fl & kAck)) e = Event::SynAck;
  else if (fl & kSyn) e = Event::Syn;
  else if (!(fl & kAck)) {
    bad_.inc();  // a segment without ACK is only ever a SYN or a RST
    if (k) k();
    return;
  } else if (fl & kFin) e = Event::Fin;
  else e = Event::Ack;
  if (!t || (t->state == State::Listen && e != Event::Syn)) {
    if (e != Event::Rst) respond_rst(p);
    if (k) k();
    return;
  }
  dispatch(*t, e, &p, &frame);
  if (t->want_output || t->acknow) return output(*t, intr, std::move(k));
  if (k) k();
}

// ------------------------------------------------------------------ Solaris's co queue

bool Tcp::co_eligible(const std::vector<uint8_t>& frame) const {
  if (!c_.tcp_rcv_co) return false;
  mbp2::Parsed p;
  if (mbp2::parse_inet(frame, p, false) != mbp2::InetError::None || p.d.proto != mbp2::kIpProtoTcp || p.d.dst_node != node_) return false;
  const Tcb* t = const_cast<Tcp*>(this)->lookup(p.d.dst_port, p.d.src_node, p.d.src_port);
  // tcp_rput_data's test (tcp.c 1.156): IP left the sum to TCP (a whole datagram without
  // options, in one block), the next sequence expected, at least tcp_co_min bytes, nothing
  // held for reassembly, no urgent data; and a connection whose reader reads synchronously
  // (isuioq: taken as given wherever the option is on).
  if (!t || t->state != State::Established || (p.d.flags & (kSyn | kRst)) || !(p.d.flags & kAck)) return false;
  const uint32_t expected = t->co.empty() ? t->rcv_nxt : t->co_rnxt;
  return p.payload_len >= c_.tcp_co_min && p.payload_len > 0 && p.d.seq == expected && t->reass.empty();
}

uint64_t Tcp::co_enqueue_ps() const { return os_.instr_ps(c_.tcp_co_instr) + ip_.cksum_ps(mbp2::kTcpHeader); }

void Tcp::co_enqueue(std::vector<uint8_t>&& frame) {
  if (!co_eligible(frame)) {  // something came between: tcp_rput_data's normal path
    bool fast = false;
    const uint64_t ps = input_ps(frame, fast);
    auto f = std::make_shared<std::vector<uint8_t>>(std::move(frame));
    return cpu_.interrupt(ps, [this, f, fast] { input_at(std::move(*f), fast, true, true, {}); });
  }
  mbp2::Parsed p;
  mbp2::parse_inet(frame, p, false);
  Tcb& t = *lookup(p.d.dst_port, p.d.src_node, p.d.src_port);
  const uint32_t len = p.payload_len;
  t.co_rnxt = (t.co.empty() ? t.rcv_nxt : t.co_rnxt) + len;
  t.co_cnt += len;
  t.co.push_back(std::move(frame));
  co_queued_.inc();
  if (!t.co_timer_on) co_timer(t);
  // A rwnext from the stream head is needed: the reader is woken (strwakeq)
  if ((!t.co_wakeq_done && t.co_cnt >= t.rack_cur_max) || (p.d.flags & (kPsh | kFin)) || len < mss_) {
    t.co_wakeq_done = true;
    sorwakeup(t);
  }
}

void Tcp::co_timer(Tcb& t) {
  t.co_timer_on = true;
  const uint64_t gen = ++t.co_gen;
  const int fd = t.fd;
  cal_.at(cal_.now_ps() + static_cast<uint64_t>(std::llround(c_.tcp_delack_ms * 1e9)), [this, fd, gen] {
    Tcb* t = tcb(fd);
    if (!t || t->co_gen != gen) return;
    t->co_timer_on = false;
    if (t->co.empty()) return;
    os_.softint(0, [this, fd] { co_process(fd, false, 0, {}); });  // the timeout's service, at interrupt level
  });
}

void Tcp::co_process(int fd, bool reader, size_t max, std::function<void()> k) {
  Tcb* t = tcb(fd);
  if (t->co_timer_on) {  // tcp_rrw and tcp_co_drain cancel the queue's timer
    ++t->co_gen;
    t->co_timer_on = false;
  }
  if (t->co.empty() || (reader && t->rcvbuf.size() >= max)) {
    if (reader) {
      // the end of tcp_rrw: segments left keep the timer, and the reader is woken again when
      // they hold the deferred-ACK limit's bytes
      if (!t->co.empty()) {
        co_timer(*t);
        t->co_wakeq_done = t->co_cnt >= t->rack_cur_max;
        if (t->co_wakeq_done) sorwakeup(*t);
      } else {
        t->co_wakeq_done = false;
      }
    } else {
      t->co_wakeq_done = false;
    }
    if (k) k();
    return;
  }
  // The front segment stays queued until TCP takes it: what arrives meanwhile queues behind it
  // (in Solaris the connection's perimeter holds it back until tcp_rrw is done).
  auto f = std::make_shared<std::vector<uint8_t>>(t->co.front());
  mbp2::Parsed p;
  mbp2::parse_inet(*f, p, false);
  const uint32_t seq = p.d.seq, len = p.payload_len;
  bool fast = false;
  // (drained: tcp_input with the data's sum and its first touch; read: without, and the copy
  // out of what the NIC wrote, summed as it copies: struioput)
  uint64_t ps = input_ps(*f, fast, !reader);
  if (reader) ps += os_.copy_ps(len, host::Os::Data::Cold);
  auto take = [this, fd, seq, len, f, fast, reader, max, k = std::move(k)]() mutable {
    Tcb* t = tcb(fd);
    auto next = [this, fd, reader, max, k = std::move(k)]() mutable { co_process(fd, reader, max, std::move(k)); };
    mbp2::Parsed q;
    if (t->co.empty() || mbp2::parse_inet(t->co.front(), q, false) != mbp2::InetError::None || q.d.seq != seq) return next();  // drained meanwhile
    t->co.pop_front();
    t->co_cnt -= std::min(t->co_cnt, len);
    (reader ? co_read_ : co_drained_).inc();
    const size_t before = t->rcvbuf.size();
    input_at(std::move(*f), fast, !reader, false, [this, fd, before, reader, next = std::move(next)]() mutable {
      Tcb* t = tcb(fd);
      if (reader && t->rcvbuf.size() > before) t->co_copied += t->rcvbuf.size() - before;
      next();
    });
  };
  if (!reader) return cpu_.interrupt(ps, std::move(take));  // tcp_co_drain, at interrupt level
  rx_ps_.inc(ps);
  os_.kernel(ps, std::move(take));  // tcp_rrw, in the reader's call
}

}  // namespace mbpsim::sockets
