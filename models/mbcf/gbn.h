// MBCF/Ether's Go-back-N (thesis 6.1.4) as a pure, time-free state machine: one node's end of
// the protocol towards every peer. It consumes events (a request to send, a frame's protocol
// bytes, a frame that left the MAC, a timer that expired, a restart) and answers with actions
// through `Actions` (send this packet, set that timer, the window has room). It reads no clock
// and owns no timer: the host (EtherSystem) keeps time, runs the timers and turns actions into
// frames, so the machine is unit-tested alone (tests/unit/gbn_test.cpp) and maps row for row to
// the SPIN model models/verify/gbn.pml (models/verify/README.md says how).
//
// Two controllers per peer, each an explicit state x event table (gbn.cpp), in the style of the
// MBP directory's (models/mbp/protocol.cpp): the sender (Tx) and the receiver (Rx). A (state,
// event) pair with no row is an undefined transition: a hard error naming the node, the peer,
// the state and the event. The other protocol variables (the ack request outstanding, TH1, the
// retry count, ...) are the tables' guards, written beside each row.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "models/core/stats.h"
#include "models/mbcf/command.h"

namespace mbpsim::mbcf::gbn {

// 8-bit sequence arithmetic: `a` is at or after `b` within half the space.
inline bool seq_ge(uint8_t a, uint8_t b) { return static_cast<uint8_t>(a - b) < 128; }

// Sender: Sending (normal), Resending (the handshaked resend of what was on the wire when a loss
// was seen), Greeting (we restarted; our Hello is unanswered and sequenced packets wait).
enum class TxState : uint8_t { Sending, Resending, Greeting, Count };
enum class TxEvent : uint8_t {
  Submit,    // a new sequenced packet to number and send
  Left,      // a sequenced frame left the MAC (or the NIC dropped it): the ack timer starts
  Ack,       // RECV_P of a frame from the peer (any frame but a Hello or HelloAck)
  ResendReq, // the peer saw a gap
  Timeout,   // the ack timer expired (a live one)
  Hello,     // the peer restarted
  HelloAck,  // the peer answered our Hello
  HelloTimer,
  Restart,   // we restarted (power on)
  Count
};
enum class TxAction : uint8_t {
  Undefined,
  Number,       // END_P, an ack request every TH1, kept; on the wire unless the state holds it back
  ArmTimer,     // a new generation of the ack timer (the older one is void)
  Collect,      // free what RECV_P acknowledges; then go on with a resend, re-arm, or stop the timer
  Stale,        // from before our restart, or ahead of the peer's HelloAck: dropped
  StartResend,  // handshaked resend of the oldest, one at a time, up to what was on the wire
  Expire,       // ack timer: an ack request if nothing was asked, else a resend
  ObeyHello,    // answer; unless a repeat, abandon what is outstanding and open a fresh window
  Greeted,      // our Hello answered: numbering goes on from its RECV_P, what waited goes out
  Greet,        // (again) a Hello, with back-off
  Ignore,
  Restart,      // every number reset; Hello
};
// Receiver: InStep, or GapAsked (a resend request is outstanding: not asked again until the
// request's timer runs out with no progress, or an in-order packet arrives).
enum class RxState : uint8_t { InStep, GapAsked, Count };
enum class RxEvent : uint8_t { InOrder, Duplicate, Gap, Poll, Unanswered, ResendTimer, Count };
enum class RxAction : uint8_t {
  Undefined,
  Accept,        // counted as arrived (refused when it cannot be taken: the sender brings it again)
  Reack,         // a duplicate: the ack may have been lost, say again where we are
  Ack,           // an acknowledgement-only packet with our count
  AskResend,     // a gap: ask the sender to resend after our count
  Ignore,
  MayAskAgain,   // the resend request's timer: with no progress since, a gap may ask again
};

const char* to_string(TxState s);
const char* to_string(TxEvent e);
const char* to_string(RxState s);
const char* to_string(RxEvent e);

// Next states allowed by a row: a bit per state.
using States = uint8_t;
template <typename S, typename... More>
constexpr States states(S s, More... more) {
  return static_cast<States>((1u << static_cast<unsigned>(s)) | (0u | ... | (1u << static_cast<unsigned>(more))));
}
struct TxRow {
  TxState state;
  TxEvent event;
  TxAction action;
  States next;
};
struct RxRow {
  RxState state;
  RxEvent event;
  RxAction action;
  States next;
};
TxAction tx_action(TxState s, TxEvent e);
States tx_next(TxState s, TxEvent e);
RxAction rx_action(RxState s, RxEvent e);
States rx_next(RxState s, RxEvent e);
// The rows, for tests and documentation.
const TxRow* tx_rows(int* n);
const RxRow* rx_rows(int* n);

// Where an arrived sequenced packet stands against the packets counted so far.
enum class Order : uint8_t { InOrder, Duplicate, Gap };

enum class Timer : uint8_t {
  Ack,     // tag: the timer's generation (a later arming or a collection cancels it)
  Resend,  // tag: the receive count when the resend was asked for
  Hello,
};

// What the machine asks of its host. Called while an event is handled, in the order the
// protocol does things (the order of frames on the wire depends on it).
class Actions {
 public:
  virtual ~Actions() = default;
  // A packet for the NIC now (a sequenced one, a control packet, a Hello or HelloAck). The host
  // stamps RECV_P (Endpoint::arrived) on it, as on every frame to the peer, but a Hello's or
  // HelloAck's, which the machine sets.
  virtual void send(uint32_t peer, const Packet& p) = 0;
  // Calls back timeout / resend_timer / hello_timer after `us`, if the node is still up.
  virtual void set_timer(Timer t, uint32_t peer, double us, uint64_t tag) = 0;
  // The pair made acknowledgement progress (or its first packet became outstanding).
  virtual void progress(uint32_t peer) = 0;
  // The count of packets arrived from the peer changed (a NIC's order-checking unit follows it).
  virtual void arrived(uint32_t peer, uint8_t count) = 0;
  // The window may have room: requests waiting for it may go (Endpoint::window_full says).
  virtual void release(uint32_t peer) = 0;
};

struct Params {
  uint32_t nodes = 0, self = 0;
  uint32_t th1 = 16, th1_min = 1, th2 = 32, tx_buffers = 64;
  double ack_timeout_us = 0, resend_timeout_us = 0, max_backoff_us = 0;
  uint32_t max_timeouts = 0;
};

// The statistics the protocol counts (registered by the host, under its names).
struct Counters {
  Counter &dup, &gap, &resends, &resend_reqs, &acks_sent, &timeouts, &ack_polls, &th1_cuts, &peer_resets,
      &peers_unresponsive, &abandoned, &hellos, &stale;
};

class Endpoint {
 public:
  // Half the 8-bit END_P/RECV_P space, less one: what a receiver tells apart.
  static constexpr size_t kMaxOutstanding = 127;

  Endpoint(const Params& p, Counters c, Actions& out);
  // Host memory the endpoint holds per peer (its window's queue empty).
  static uint64_t bytes_per_peer();

  // --- events
  // A sequenced packet for `peer` (not ourselves): numbered, kept until collected, and sent
  // unless a resend or our Hello holds it back.
  void submit(uint32_t peer, Packet p);
  void left(uint32_t peer);
  // A live ack timer (ack_timer_live) expired.
  void timeout(uint32_t peer);
  // The protocol bytes of a frame from `peer`: Hellos, acknowledgements, resend and ack
  // requests are consumed here (false); true: a packet carrying commands, for the host.
  bool frame(uint32_t peer, uint8_t ctrl_p, uint8_t end_p, uint8_t recv_p);
  // A sequenced packet with commands, as ordered (classify, or a NIC's order-checking unit);
  // `room`: an in-order packet can be taken (the target's save area is not full). True: the
  // packet is accepted and counted.
  bool data(uint32_t peer, Order o, uint8_t end_p, bool room);
  // An accepted packet asked for an acknowledgement and nothing went back to its sender.
  void unanswered(uint32_t peer);
  void resend_timer(uint32_t peer, uint8_t at);
  void hello_timer(uint32_t peer);
  // The node restarted, as incarnation `inc`: every peer's numbers are reset and each is
  // greeted (Hello, repeated with back-off until answered).
  void restart(uint32_t inc);

  // --- questions
  Order classify(uint32_t peer, uint8_t end_p) const;
  uint32_t window() const;
  bool window_full(uint32_t peer) const { return p_[peer].unacked.size() >= window(); }
  bool ack_timer_live(uint32_t peer, uint64_t gen) const { return gen == p_[peer].timer_gen && !p_[peer].unacked.empty(); }
  uint8_t arrived(uint32_t peer) const { return p_[peer].arrived; }
  uint8_t sent(uint32_t peer) const { return p_[peer].sent; }
  const std::deque<Packet>& unacked(uint32_t peer) const { return p_[peer].unacked; }
  TxState tx_state(uint32_t peer) const { return p_[peer].tx; }
  RxState rx_state(uint32_t peer) const { return p_[peer].rx; }
  uint32_t th1(uint32_t peer) const { return p_[peer].th1; }
  bool ack_pending(uint32_t peer) const { return p_[peer].ack_pending; }
  uint32_t buffers_used() const { return used_; }
  // The wait before retry number `tries` (0, 1, ...): the ack timeout, doubling from the
  // max_timeouts-th retry on, up to max_backoff_us.
  double retry_us(uint32_t tries) const;

 private:
  struct Peer {
    // sender
    TxState tx = TxState::Sending;
    uint8_t sent = 0;             // END_P of the last packet numbered
    std::deque<Packet> unacked;   // numbered, not yet collected (END_P in each)
    uint32_t th1 = 16;            // an ack request every TH1 uncollected packets (dynamic N)
    uint8_t wire_sent = 0;        // highest END_P handed to the NIC outside a resend
    uint8_t resend_end = 0;       // a resend covers the packets up to this END_P; later ones wait
    bool ack_pending = false;     // an ack request is outstanding (for END_P ack_req_seq)
    uint8_t ack_req_seq = 0;
    uint32_t timeouts = 0;        // in a row without progress
    uint64_t timer_gen = 0;
    uint32_t hello_tries = 0;
    int hello_seen = -1;          // the peer's incarnation (END_P of its Hello) last obeyed
    uint8_t reset_base = 0;       // our END_P when we obeyed it: the fresh window follows it
    // receiver
    RxState rx = RxState::InStep;
    uint8_t arrived = 0;          // END_P of the last packet accepted
  };
  // A row's action for the peer's state and the event (a hard error if there is none); after
  // it ran, `check` makes sure the state it left is one the row allows.
  TxAction row(uint32_t peer, TxEvent e) const;
  RxAction row(uint32_t peer, RxEvent e) const;
  void check(uint32_t peer, TxState from, TxEvent e) const;
  void check(uint32_t peer, RxState from, RxEvent e) const;
  [[noreturn]] void fail(uint32_t peer, const std::string& what) const;
  void number(uint32_t peer, Packet p);
  void collect(uint32_t peer, uint8_t recv_p);
  void start_resend(uint32_t peer);
  void obey_hello(uint32_t peer, uint8_t inc);
  void send_control(uint32_t peer, uint8_t flags);
  void send_hello(uint32_t peer);
  void arm_timer(uint32_t peer);
  void send_unsent(uint32_t peer);
  void resend_next(uint32_t peer);

  Params c_;
  Counters n_;
  Actions& out_;
  std::vector<Peer> p_;
  uint32_t used_ = 0;        // transmit buffers held by unacknowledged packets, all peers
  uint32_t incarnation_ = 0;
};

}  // namespace mbpsim::mbcf::gbn
