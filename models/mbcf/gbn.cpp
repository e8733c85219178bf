#include "models/mbcf/gbn.h"

#include <algorithm>
#include <cmath>

#include "models/core/error.h"
#include "models/core/footprint.h"
#include "models/core/mutant.h"

namespace mbpsim::mbcf::gbn {

using TS = TxState;
using TE = TxEvent;
using TA = TxAction;
using RS = RxState;
using RE = RxEvent;
using RA = RxAction;

// The sender. Guards (the protocol variables a row's action reads):
//   Number      on the wire in Sending; kept back in Resending (it follows the resend) and in
//               Greeting (it follows the HelloAck). An ack request when TH1 packets are
//               uncollected and none is outstanding within TH1. Above 3/4 of the node's
//               transmit buffers: every peer's TH1 halves and peers with packets outstanding
//               are asked for an acknowledgement (6.1.4's hint of a lack of buffers).
//   Collect     only numbers we have sent count (a stale RECV_P from before a reset must not
//               collect). With progress: the retry count restarts, TH1 doubles back when
//               buffers are plentiful, a resend goes on (Resending) or the timer restarts; the
//               window may have room.
//   Expire      nothing asked of the peer (no ack request outstanding, no resend asked of it):
//               these buffers are only uncollected, so an ack request; else a handshaked resend.
//   ObeyHello   a repeat of a Hello already obeyed is only answered.
//   Greeted     only the HelloAck of our current incarnation.
const TxRow kTxRows[] = {
    {TS::Sending, TE::Submit, TA::Number, states(TS::Sending)},
    {TS::Resending, TE::Submit, TA::Number, states(TS::Resending)},
    {TS::Greeting, TE::Submit, TA::Number, states(TS::Greeting)},
    {TS::Sending, TE::Left, TA::ArmTimer, states(TS::Sending)},
    {TS::Resending, TE::Left, TA::ArmTimer, states(TS::Resending)},
    {TS::Sending, TE::Ack, TA::Collect, states(TS::Sending)},
    {TS::Resending, TE::Ack, TA::Collect, states(TS::Resending, TS::Sending)},  // Sending: resend done
    {TS::Greeting, TE::Ack, TA::Stale, states(TS::Greeting)},
    {TS::Sending, TE::ResendReq, TA::StartResend, states(TS::Resending, TS::Sending)},  // Sending: nothing to resend
    {TS::Resending, TE::ResendReq, TA::StartResend, states(TS::Resending, TS::Sending)},
    {TS::Sending, TE::Timeout, TA::Expire, states(TS::Sending, TS::Resending)},  // Sending: ack request
    {TS::Resending, TE::Timeout, TA::StartResend, states(TS::Resending, TS::Sending)},
    {TS::Sending, TE::Hello, TA::ObeyHello, states(TS::Sending)},
    {TS::Resending, TE::Hello, TA::ObeyHello, states(TS::Sending, TS::Resending)},  // Resending: a repeat
    {TS::Greeting, TE::Hello, TA::ObeyHello, states(TS::Greeting)},
    {TS::Sending, TE::HelloAck, TA::Ignore, states(TS::Sending)},
    {TS::Resending, TE::HelloAck, TA::Ignore, states(TS::Resending)},
    {TS::Greeting, TE::HelloAck, TA::Greeted, states(TS::Sending, TS::Greeting)},  // Greeting: an older one
    {TS::Sending, TE::HelloTimer, TA::Ignore, states(TS::Sending)},
    {TS::Resending, TE::HelloTimer, TA::Ignore, states(TS::Resending)},
    {TS::Greeting, TE::HelloTimer, TA::Greet, states(TS::Greeting)},
    {TS::Sending, TE::Restart, TA::Restart, states(TS::Greeting)},
    {TS::Resending, TE::Restart, TA::Restart, states(TS::Greeting)},
    {TS::Greeting, TE::Restart, TA::Restart, states(TS::Greeting)},
};
constexpr int kNumTxRows = sizeof(kTxRows) / sizeof(kTxRows[0]);

// The receiver. Guards: Accept needs room (else nothing changes: the sender's Go-back-N brings
// the packet again); MayAskAgain only if nothing arrived since the request (the count it was
// asked at); Reack stays silent under the dup_dropped_silently mutant.
const RxRow kRxRows[] = {
    {RS::InStep, RE::InOrder, RA::Accept, states(RS::InStep)},
    {RS::GapAsked, RE::InOrder, RA::Accept, states(RS::InStep, RS::GapAsked)},  // GapAsked: no room
    {RS::InStep, RE::Duplicate, RA::Reack, states(RS::InStep)},
    {RS::GapAsked, RE::Duplicate, RA::Reack, states(RS::GapAsked)},
    {RS::InStep, RE::Gap, RA::AskResend, states(RS::GapAsked)},
    {RS::GapAsked, RE::Gap, RA::Ignore, states(RS::GapAsked)},  // asked once already
    {RS::InStep, RE::Poll, RA::Ack, states(RS::InStep)},
    {RS::GapAsked, RE::Poll, RA::Ack, states(RS::GapAsked)},
    {RS::InStep, RE::Unanswered, RA::Ack, states(RS::InStep)},
    {RS::GapAsked, RE::Unanswered, RA::Ack, states(RS::GapAsked)},
    {RS::InStep, RE::ResendTimer, RA::Ignore, states(RS::InStep)},
    {RS::GapAsked, RE::ResendTimer, RA::MayAskAgain, states(RS::InStep, RS::GapAsked)},
};
constexpr int kNumRxRows = sizeof(kRxRows) / sizeof(kRxRows[0]);

namespace {
constexpr int kTxS = static_cast<int>(TS::Count), kTxE = static_cast<int>(TE::Count);
constexpr int kRxS = static_cast<int>(RS::Count), kRxE = static_cast<int>(RE::Count);
struct Dense {
  const TxRow* t[kTxS][kTxE]{};
  const RxRow* r[kRxS][kRxE]{};
  Dense() {
    for (const TxRow& w : kTxRows) {
      const TxRow*& slot = t[static_cast<int>(w.state)][static_cast<int>(w.event)];
      if (slot) internal_error(std::string("Go-back-N sender table: two rows for ") + to_string(w.state) + " x " + to_string(w.event));
      slot = &w;
    }
    for (const RxRow& w : kRxRows) {
      const RxRow*& slot = r[static_cast<int>(w.state)][static_cast<int>(w.event)];
      if (slot) internal_error(std::string("Go-back-N receiver table: two rows for ") + to_string(w.state) + " x " + to_string(w.event));
      slot = &w;
    }
  }
};
const Dense& dense() {
  static const Dense d;
  return d;
}
bool in(States set, unsigned s) { return set >> s & 1u; }
}  // namespace

const char* to_string(TxState s) {
  static const char* const n[] = {"Sending", "Resending", "Greeting"};
  return static_cast<int>(s) < kTxS ? n[static_cast<int>(s)] : "?";
}
const char* to_string(TxEvent e) {
  static const char* const n[] = {"Submit", "Left", "Ack", "ResendReq", "Timeout", "Hello", "HelloAck", "HelloTimer", "Restart"};
  return static_cast<int>(e) < kTxE ? n[static_cast<int>(e)] : "?";
}
const char* to_string(RxState s) {
  static const char* const n[] = {"InStep", "GapAsked"};
  return static_cast<int>(s) < kRxS ? n[static_cast<int>(s)] : "?";
}
const char* to_string(RxEvent e) {
  static const char* const n[] = {"InOrder", "Duplicate", "Gap", "Poll", "Unanswered", "ResendTimer"};
  return static_cast<int>(e) < kRxE ? n[static_cast<int>(e)] : "?";
}

TxAction tx_action(TxState s, TxEvent e) {
  const TxRow* w = dense().t[static_cast<int>(s)][static_cast<int>(e)];
  return w ? w->action : TA::Undefined;
}
States tx_next(TxState s, TxEvent e) {
  const TxRow* w = dense().t[static_cast<int>(s)][static_cast<int>(e)];
  return w ? w->next : 0;
}
RxAction rx_action(RxState s, RxEvent e) {
  const RxRow* w = dense().r[static_cast<int>(s)][static_cast<int>(e)];
  return w ? w->action : RA::Undefined;
}
States rx_next(RxState s, RxEvent e) {
  const RxRow* w = dense().r[static_cast<int>(s)][static_cast<int>(e)];
  return w ? w->next : 0;
}
const TxRow* tx_rows(int* n) {
  *n = kNumTxRows;
  return kTxRows;
}
const RxRow* rx_rows(int* n) {
  *n = kNumRxRows;
  return kRxRows;
}

// ------------------------------------------------------------------ the endpoint

uint64_t Endpoint::bytes_per_peer() { return sizeof(Peer) + deque_bytes<Packet>(); }

Endpoint::Endpoint(const Params& p, Counters c, Actions& out) : c_(p), n_(c), out_(out), p_(p.nodes) {
  for (Peer& P : p_) P.th1 = c_.th1;
}

void Endpoint::fail(uint32_t peer, const std::string& what) const {
  internal_error("Go-back-N, node " + std::to_string(c_.self) + " with node " + std::to_string(peer) + ": " + what);
}

TxAction Endpoint::row(uint32_t peer, TxEvent e) const {
  const TxAction a = tx_action(p_[peer].tx, e);
  if (a == TA::Undefined)
    fail(peer, std::string("undefined sender transition: event ") + to_string(e) + " in state " + to_string(p_[peer].tx));
  return a;
}
RxAction Endpoint::row(uint32_t peer, RxEvent e) const {
  const RxAction a = rx_action(p_[peer].rx, e);
  if (a == RA::Undefined)
    fail(peer, std::string("undefined receiver transition: event ") + to_string(e) + " in state " + to_string(p_[peer].rx));
  return a;
}
void Endpoint::check(uint32_t peer, TxState from, TxEvent e) const {
  if (!in(tx_next(from, e), static_cast<unsigned>(p_[peer].tx)))
    fail(peer, std::string("sender went from ") + to_string(from) + " on " + to_string(e) + " to " + to_string(p_[peer].tx) +
                   ", which its row does not allow");
}
void Endpoint::check(uint32_t peer, RxState from, RxEvent e) const {
  if (!in(rx_next(from, e), static_cast<unsigned>(p_[peer].rx)))
    fail(peer, std::string("receiver went from ") + to_string(from) + " on " + to_string(e) + " to " + to_string(p_[peer].rx) +
                   ", which its row does not allow");
}

// TH2 bounds a peer's outstanding packets below half the 8-bit sequence space, so the receiver
// can tell a retransmission (behind it) from a packet after a gap (ahead of it).
uint32_t Endpoint::window() const { return mutant::on(mutant::Id::GbnWindowIsSeqSpace) ? 256 : c_.th2; }

double Endpoint::retry_us(uint32_t tries) const {
  if (tries < c_.max_timeouts) return c_.ack_timeout_us;
  const int doublings = static_cast<int>(std::min<uint32_t>(tries + 1 - c_.max_timeouts, 40));
  return std::min(c_.max_backoff_us, c_.ack_timeout_us * std::ldexp(1.0, doublings));
}

Order Endpoint::classify(uint32_t peer, uint8_t end_p) const {
  // Fewer than 128 packets are outstanding: up to 128 behind the count (the last arrived among
  // them) is a duplicate, up to 127 ahead of it is beyond a gap.
  const uint8_t d = static_cast<uint8_t>(end_p - p_[peer].arrived);
  if (d == 1) return Order::InOrder;
  const bool behind = mutant::on(mutant::Id::GbnWindowIsSeqSpace) ? d == 0 : (d == 0 || d >= 128);
  return behind ? Order::Duplicate : Order::Gap;
}

// ------------------------------------------------------------------ sender

void Endpoint::send_control(uint32_t peer, uint8_t flags) {
  Packet p;
  p.src_pnode = c_.self;
  p.ctrl_p = static_cast<uint8_t>(kAckOnly | flags);
  p.end_p = p_[peer].sent;
  if (flags & kResendReq) n_.resend_reqs.inc();
  else n_.acks_sent.inc();
  out_.send(peer, p);
}

// A restarted node's Hello (kAckReq: please answer) carries its incarnation in END_P; it is
// repeated, with the usual back-off, until the peer's HelloAck comes back, so a lost Hello
// cannot leave the pair out of step.
void Endpoint::send_hello(uint32_t peer) {
  Packet h;
  h.src_pnode = c_.self;
  h.ctrl_p = kAckOnly | kHello | kNoFlow | kAckReq;
  h.end_p = static_cast<uint8_t>(incarnation_);
  n_.hellos.inc();
  out_.send(peer, h);
  out_.set_timer(Timer::Hello, peer, retry_us(p_[peer].hello_tries++), 0);
}

// A peer silent for max_timeouts timeouts in a row is probed ever more rarely (doubling up to
// max_backoff_us), never given up: giving up on a live peer cut off for a while (a long loss
// burst) lost packets and left the two ends' sequence numbers out of step. A restarted peer
// announces itself (Hello), and only then is what it never acknowledged abandoned.
void Endpoint::arm_timer(uint32_t peer) {
  Peer& P = p_[peer];
  out_.set_timer(Timer::Ack, peer, retry_us(P.timeouts), ++P.timer_gen);
}

// Hands the NIC every unacknowledged packet that has not been on the wire yet.
void Endpoint::send_unsent(uint32_t peer) {
  Peer& P = p_[peer];
  for (const Packet& q : P.unacked) {
    if (seq_ge(P.wire_sent, q.end_p)) continue;
    P.wire_sent = q.end_p;
    out_.send(peer, q);
  }
}

void Endpoint::resend_next(uint32_t peer) {
  Peer& P = p_[peer];
  if (P.unacked.empty() || !seq_ge(P.resend_end, P.unacked.front().end_p)) {
    P.tx = TS::Sending;
    send_unsent(peer);
    return;
  }
  Packet p = P.unacked.front();
  p.ctrl_p |= kHandshake | kAckReq;
  n_.resends.inc();
  out_.send(peer, p);
}

// Only what was on the wire when the loss was detected goes handshaked (6.1.4: "the lost
// packets are then re-transmitted, in turn"); packets requested meanwhile wait and then go out
// normally.
void Endpoint::start_resend(uint32_t peer) {
  Peer& P = p_[peer];
  if (P.tx != TS::Resending) P.resend_end = P.wire_sent;
  P.tx = TS::Resending;
  resend_next(peer);
}

void Endpoint::number(uint32_t peer, Packet p) {
  Peer& P = p_[peer];
  p.end_p = ++P.sent;
  p.ctrl_p |= kSequenced;
  if (P.unacked.size() + 1 >= P.th1 && (!P.ack_pending || static_cast<uint8_t>(p.end_p - P.ack_req_seq) >= P.th1)) {
    p.ctrl_p |= kAckReq;
    P.ack_pending = true;
    P.ack_req_seq = p.end_p;
  }
  P.unacked.push_back(std::move(p));
  // Outstanding packets never exceed what an 8-bit sequence number tells apart (TH2 <= 127).
  if (P.unacked.size() > kMaxOutstanding)
    fail(peer, std::to_string(P.unacked.size()) + " packets outstanding, beyond the " + std::to_string(kMaxOutstanding) +
                   " an 8-bit sequence number can tell apart");
  ++used_;
  if (used_ * 4 > c_.tx_buffers * 3) {
    for (uint32_t q = 0; q < p_.size(); ++q) {
      Peer& Q = p_[q];
      if (Q.th1 > c_.th1_min) {
        Q.th1 = std::max(c_.th1_min, Q.th1 / 2);
        n_.th1_cuts.inc();
      }
      if (!Q.unacked.empty() && q != peer) send_control(q, kAckReq);
    }
  }
  if (P.unacked.size() == 1) out_.progress(peer);
  if (P.tx == TS::Sending) {
    P.wire_sent = P.unacked.back().end_p;
    out_.send(peer, P.unacked.back());
  }
}

void Endpoint::collect(uint32_t peer, uint8_t recv_p) {
  Peer& P = p_[peer];
  bool progress = false;
  while (!P.unacked.empty() && seq_ge(recv_p, P.unacked.front().end_p) && seq_ge(P.sent, recv_p)) {
    P.unacked.pop_front();
    --used_;
    progress = true;
  }
  if (!progress) return;
  if (P.ack_pending && seq_ge(recv_p, P.ack_req_seq)) P.ack_pending = false;
  P.timeouts = 0;
  out_.progress(peer);
  if (used_ * 4 < c_.tx_buffers && P.th1 < c_.th1) P.th1 = std::min(c_.th1, P.th1 * 2);
  if (P.tx == TS::Resending) resend_next(peer);
  else if (!P.unacked.empty()) arm_timer(peer);
  else ++P.timer_gen;
  out_.release(peer);
}

void Endpoint::obey_hello(uint32_t peer, uint8_t inc) {
  Peer& P = p_[peer];
  // HelloAck, every time (the last one may have been lost); RECV_P says where our numbering to
  // the peer went on from.
  auto answer = [&] {
    Packet a;
    a.src_pnode = c_.self;
    a.ctrl_p = kAckOnly | kHello | kNoFlow;
    a.end_p = inc;
    a.recv_p = P.reset_base;
    out_.send(peer, a);
  };
  if (P.hello_seen == inc) {  // a repeat of a Hello already obeyed
    answer();
    return;
  }
  P.hello_seen = inc;
  n_.peer_resets.inc();
  n_.abandoned.inc(P.unacked.size());  // the peer restarted: it will never acknowledge these
  used_ -= static_cast<uint32_t>(P.unacked.size());
  P.unacked.clear();
  // Our numbering goes on (the fresh window starts after the last number we used), so that
  // nothing of the old window still on its way (a resend already built, a frame the path held
  // back behind the HelloAck) can pass for a new packet; the peer numbers afresh.
  if (mutant::on(mutant::Id::HelloRestartsNumbering)) P.sent = 0;
  P.reset_base = P.sent;
  P.wire_sent = P.resend_end = P.sent;
  P.arrived = 0;
  out_.arrived(peer, 0);
  P.ack_pending = false;
  if (P.tx == TS::Resending) P.tx = TS::Sending;
  P.rx = RS::InStep;
  P.timeouts = 0;
  ++P.timer_gen;
  answer();
  out_.release(peer);  // into the fresh window, no more than it holds
}

void Endpoint::submit(uint32_t peer, Packet p) {
  const TxState from = p_[peer].tx;
  row(peer, TE::Submit);  // Number
  number(peer, std::move(p));
  check(peer, from, TE::Submit);
}

void Endpoint::left(uint32_t peer) {
  const TxState from = p_[peer].tx;
  row(peer, TE::Left);  // ArmTimer
  arm_timer(peer);
  check(peer, from, TE::Left);
}

void Endpoint::timeout(uint32_t peer) {
  Peer& P = p_[peer];
  const TxState from = P.tx;
  const TxAction a = row(peer, TE::Timeout);
  if (++P.timeouts == c_.max_timeouts) n_.peers_unresponsive.inc();
  if (a == TA::Expire && !P.ack_pending && P.rx != RS::GapAsked) {
    n_.ack_polls.inc();
    P.ack_pending = true;
    P.ack_req_seq = P.sent;
    send_control(peer, kAckReq);
    arm_timer(peer);
  } else {  // lost ack, lost resend request, or lost handshake: resend the oldest
    n_.timeouts.inc();
    start_resend(peer);
  }
  check(peer, from, TE::Timeout);
}

bool Endpoint::frame(uint32_t peer, uint8_t ctrl_p, uint8_t end_p, uint8_t recv_p) {
  Peer& P = p_[peer];
  const TxState from = P.tx;
  if (ctrl_p & kHello) {
    const bool hello = (ctrl_p & kAckReq) != 0;  // else a HelloAck: the peer has reset for us
    const TxEvent e = hello ? TE::Hello : TE::HelloAck;
    const TxAction a = row(peer, e);
    if (a == TA::ObeyHello) {
      obey_hello(peer, end_p);
    } else if (a == TA::Greeted && end_p == static_cast<uint8_t>(incarnation_)) {
      P.tx = TS::Sending;
      P.hello_tries = 0;
      // The peer's numbering goes on from where it was (RECV_P of the HelloAck): a frame it
      // sent before it learnt of our restart (a resend, or one the path held back) is numbered
      // at or below that, and is taken as a duplicate, not as a new packet.
      P.arrived = recv_p;
      out_.arrived(peer, P.arrived);
      send_unsent(peer);  // what waited for the handshake goes out now
    }
    check(peer, from, e);
    return false;
  }
  if (row(peer, TE::Ack) == TA::Stale) {
    n_.stale.inc();
    return false;
  }
  collect(peer, recv_p);
  check(peer, from, TE::Ack);
  if (!(ctrl_p & kAckOnly)) return true;
  if (ctrl_p & kResendReq) {
    const TxState before = P.tx;
    row(peer, TE::ResendReq);  // StartResend
    start_resend(peer);
    check(peer, before, TE::ResendReq);
  } else if (ctrl_p & kAckReq) {
    const RxState before = P.rx;
    row(peer, RE::Poll);  // Ack
    send_control(peer, 0);
    check(peer, before, RE::Poll);
  }
  return false;
}

void Endpoint::hello_timer(uint32_t peer) {
  const TxState from = p_[peer].tx;
  if (row(peer, TE::HelloTimer) == TA::Greet) send_hello(peer);
  check(peer, from, TE::HelloTimer);
}

void Endpoint::restart(uint32_t inc) {
  incarnation_ = inc;
  used_ = 0;
  for (uint32_t q = 0; q < p_.size(); ++q) {
    Peer& P = p_[q];
    if (q != c_.self) row(q, TE::Restart);  // Restart
    P.unacked.clear();
    P.sent = P.arrived = P.wire_sent = P.resend_end = P.reset_base = 0;
    P.tx = TS::Sending;
    P.rx = RS::InStep;
    P.timeouts = 0;
    ++P.timer_gen;
  }
  for (uint32_t q = 0; q < p_.size(); ++q) out_.arrived(q, 0);
  for (uint32_t q = 0; q < p_.size(); ++q)
    if (q != c_.self) {
      Peer& P = p_[q];
      P.tx = TS::Greeting;
      P.hello_tries = 0;
      P.hello_seen = -1;
      send_hello(q);
    }
}

// ------------------------------------------------------------------ receiver

bool Endpoint::data(uint32_t peer, Order o, uint8_t end_p, bool room) {
  Peer& P = p_[peer];
  const RxState from = P.rx;
  const RxEvent e = o == Order::InOrder ? RE::InOrder : o == Order::Duplicate ? RE::Duplicate : RE::Gap;
  const RxAction a = row(peer, e);
  bool accepted = false;
  switch (a) {
    case RA::Accept:
      if (room) {
        P.arrived = end_p;
        out_.arrived(peer, P.arrived);
        P.rx = RS::InStep;
        accepted = true;
      }
      break;
    case RA::Reack:
      n_.dup.inc();
      if (!mutant::on(mutant::Id::DupDroppedSilently)) send_control(peer, 0);
      break;
    case RA::AskResend:
      n_.gap.inc();
      P.rx = RS::GapAsked;
      send_control(peer, kResendReq);
      out_.set_timer(Timer::Resend, peer, c_.resend_timeout_us, P.arrived);
      break;
    case RA::Ignore:
      n_.gap.inc();
      break;
    default:
      fail(peer, std::string("receiver row without a data action for ") + to_string(e));
  }
  check(peer, from, e);
  return accepted;
}

void Endpoint::unanswered(uint32_t peer) {
  const RxState from = p_[peer].rx;
  row(peer, RE::Unanswered);  // Ack
  send_control(peer, 0);
  check(peer, from, RE::Unanswered);
}

void Endpoint::resend_timer(uint32_t peer, uint8_t at) {
  Peer& P = p_[peer];
  const RxState from = P.rx;
  if (row(peer, RE::ResendTimer) == RA::MayAskAgain && P.arrived == at) P.rx = RS::InStep;
  check(peer, from, RE::ResendTimer);
}

}  // namespace mbpsim::mbcf::gbn
