// TCP's timers (4.3BSD tcp_timer): round-trip estimation, retransmission, delayed ACKs on the
// fast tick, and dropping a connection.
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

// ------------------------------------------------------------------ timers

void Tcp::rtt_sample(Tcb& t) {
  const double r = static_cast<double>(cal_.now_ps() - t.rtt_start) / 1e12;
  if (t.srtt_s == 0) {
    t.srtt_s = r;
    t.rttvar_s = r / 2;
  } else {
    const double delta = r - t.srtt_s;
    t.srtt_s += delta / 8;
    t.rttvar_s += (std::fabs(delta) - t.rttvar_s) / 4;
  }
  t.timing = false;
}

uint64_t Tcp::rto_ps(const Tcb& t) const {
  double rto = t.srtt_s == 0 ? c_.tcp_rto_initial_s : std::max(c_.tcp_rto_min_s, t.srtt_s + 4 * t.rttvar_s);
  if (t.persist) rto = std::max(rto, c_.tcp_persist_min_s);
  rto = std::min(rto * std::pow(2.0, std::min<uint32_t>(t.rxtshift, 30)), c_.tcp_rto_max_s);
  return static_cast<uint64_t>(std::llround(rto * 1e12));
}

void Tcp::arm_rexmt(Tcb& t) {
  // A timer of n slow ticks fires on the n-th tick of tcp_slowtimo after now.
  const uint64_t tick = static_cast<uint64_t>(std::llround(c_.tcp_slowtimo_ms * 1e9));
  const uint64_t ticks = std::max<uint64_t>(1, (rto_ps(t) + tick - 1) / tick);
  const uint64_t now = cal_.now_ps();
  const uint64_t when = now / tick * tick + ticks * tick;
  t.rexmt_on = true;
  const uint64_t gen = ++t.rexmt_gen;
  const int fd = t.fd;
  cal_.at(when, [this, fd, gen] {
    Tcb* t = tcb(fd);
    if (!t || t->rexmt_gen != gen || !t->rexmt_on) return;
    t->rexmt_on = false;
    // softclock: a software interrupt, then the timer's tcp_output at interrupt level
    os_.softint(0, [this, fd] {
      Tcb* t = tcb(fd);
      dispatch(*t, Event::Rexmt);
      if (connected(t->state) || t->state == State::SynSent || t->state == State::SynRcvd) output(*t, true);
    });
  });
}

void Tcp::cancel_rexmt(Tcb& t) {
  t.rexmt_on = false;
  t.persist = false;
  ++t.rexmt_gen;
}

void Tcp::ack_in_order(Tcb& t, uint32_t len) {
  if (!c_.solaris_deferred_ack) {  // BSD: the next tick, unless a segment carries the ACK first
    t.delack = true;
    return;
  }
  // Solaris 2.6's tcp_rput_data (tcp.c 1.156): `before` is what was received before this segment
  // and not yet acknowledged (tcp_rnxt - tcp_rack).
  const uint32_t before = t.rack_cnt;
  t.rack_cnt += len;
  if (t.rack_cnt >= t.rack_cur_max) {  // more unacknowledged data than it should hold: ACK now
    t.acknow = true;
    t.rack_cur_max = std::min(t.rack_cur_max + mss_, rack_abs_max_);
  } else if (len < mss_ && before % mss_ != 0) {
    // a short segment after data that is not whole segments: ACK now rather than wait for a
    // response this may be the tail of
    t.acknow = true;
  } else {
    t.delack = true;
  }
}

void Tcp::streams_drained(Tcb& t) {
  // The stream head back-enables TCP's read queue once a queue that was full drains to its
  // low-water mark (STRLOW); tcp_rsrv then reopens the whole window, and sends a window update
  // if it had fallen to half or less, or below an MSS.
  constexpr size_t kStrLowat = 1024;
  if (!t.qwantw || t.rcvbuf.size() > kStrLowat) return;
  t.qwantw = false;
  const uint32_t old = t.rwnd;
  t.rwnd = recvspace_;
  if (connected(t.state) && (old <= recvspace_ / 2 || old < mss_)) {
    t.acknow = true;
    winupd_out_.inc();
  }
}

void Tcp::ack_sent(Tcb& t) {
  t.acknow = false;
  t.delack = false;
  t.rack_cnt = 0;
  ++t.delack_gen;  // a deferred ACK's timer has nothing left to send
}

void Tcp::schedule_delack(Tcb& t) {
  if (c_.solaris_deferred_ack) {
    // tcp_rput_data's TH_TIMER_NEEDED: the connection's timer restarted tcp_delack_ms
    // (tcp_deferred_ack_interval) ahead, when nothing of its own is outstanding or unsent
    // (else that timer is the retransmission's, and the ACK rides on the next segment).
    if (t.snd_max != t.snd_una || !t.sndbuf.empty()) return;
    const uint64_t gen = ++t.delack_gen;
    const int fd = t.fd;
    cal_.at(cal_.now_ps() + static_cast<uint64_t>(std::llround(c_.tcp_delack_ms * 1e9)), [this, fd, gen] {
      Tcb* t = tcb(fd);
      if (!t || t->delack_gen != gen) return;
      os_.softint(0, [this, fd] {  // the timeout's STREAMS service, at interrupt level
        Tcb* t = tcb(fd);
        if (!t || !t->delack) return;
        dispatch(*t, Event::DelAck);
        if (t->acknow) output(*t, true);
      });
    });
    return;
  }
  if (fasttimo_armed_) return;
  fasttimo_armed_ = true;
  // tcp_fasttimo runs every tcp_delack_ms from boot: the next tick after now
  const uint64_t tick = static_cast<uint64_t>(std::llround(c_.tcp_delack_ms * 1e9));
  const uint64_t when = (cal_.now_ps() / tick + 1) * tick;
  cal_.at(when, [this] { fasttimo(); });
}

void Tcp::fasttimo() {
  fasttimo_armed_ = false;
  bool any = false;
  for (auto& t : tcbs_)
    if (t && t->delack) any = true;
  if (!any) return;
  os_.softint(0, [this] {
    for (auto& t : tcbs_) {
      if (!t || !t->delack) continue;
      dispatch(*t, Event::DelAck);
      if (t->acknow) output(*t, true);
    }
  });
}

void Tcp::drop(Tcb& t, Errno e) {
  drops_.inc();
  cancel_rexmt(t);
  t.error_set = true;
  t.error = e;
  t.sndbuf.clear();
  t.snd_mb.clear();
  wake_all(t);
}

void Tcp::wake_all(Tcb& t) {
  for (uint32_t kind : {kChanConn, kChanAccept, kChanSend, kChanRecv}) os_.wakeup(chan(t.fd, kind));
  os_.wakeup(ip_.select_chan());
}

void Tcp::sorwakeup(Tcb& t) {
  os_.wakeup(chan(t.fd, kChanRecv));
  os_.wakeup(ip_.select_chan());  // selwakeup
}

}  // namespace mbpsim::sockets
