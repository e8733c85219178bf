// Go-back-N alone (models/mbcf/gbn.h): its tables, each row's behaviour, and two endpoints
// joined by a lossy channel with the SPIN model's timer discipline (a timer fires only when
// nothing else can happen), checked for exactly-once, in-order delivery.
#include "models/mbcf/gbn.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <set>

namespace mbpsim::mbcf::gbn {
namespace {

struct Sent {
  uint32_t peer;
  Packet p;
};
struct TimerSet {
  Timer t;
  uint32_t peer;
  double us;
  uint64_t tag;
};

// Records what the machine asks for, in order.
class Recorder : public Actions {
 public:
  std::vector<Sent> sent;
  std::vector<TimerSet> timers;
  std::vector<uint32_t> progress_, released;
  std::map<uint32_t, uint8_t> arrived_;
  void send(uint32_t peer, const Packet& p) override { sent.push_back({peer, p}); }
  void set_timer(Timer t, uint32_t peer, double us, uint64_t tag) override { timers.push_back({t, peer, us, tag}); }
  void progress(uint32_t peer) override { progress_.push_back(peer); }
  void arrived(uint32_t peer, uint8_t count) override { arrived_[peer] = count; }
  void release(uint32_t peer) override { released.push_back(peer); }
  void clear() {
    sent.clear();
    timers.clear();
    progress_.clear();
    released.clear();
  }
};

Params params(uint32_t nodes = 2, uint32_t self = 0) {
  Params p;
  p.nodes = nodes;
  p.self = self;
  p.th1 = 4;
  p.th1_min = 1;
  p.th2 = 8;
  p.tx_buffers = 1000;
  p.ack_timeout_us = 100;
  p.resend_timeout_us = 50;
  p.max_backoff_us = 1000;
  p.max_timeouts = 2;
  return p;
}

struct Fixture {
  Stats st;
  Counters n{st.counter("dup"),        st.counter("gap"),         st.counter("retransmissions"),     st.counter("resend_reqs"),
             st.counter("acks_sent"),  st.counter("timeouts"),    st.counter("ack_polls"),   st.counter("th1_cuts"),
             st.counter("peer_resets"), st.counter("unresponsive"), st.counter("abandoned"), st.counter("hellos"),
             st.counter("stale")};
  uint64_t count(const char* name) const { return st.counter_value(name).value(); }
};

Packet cmd_packet(uint32_t tag) {
  Packet p;
  p.cmds.resize(1);
  p.dst_ptask = tag;
  return p;
}

TEST(Gbn, EveryStateEventPairHasAtMostOneRowAndRowsNameExistingNextStates) {
  int n = 0;
  const TxRow* t = tx_rows(&n);
  std::set<std::pair<int, int>> seen;
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(seen.insert({static_cast<int>(t[i].state), static_cast<int>(t[i].event)}).second);
    EXPECT_NE(t[i].next, 0) << to_string(t[i].state) << " x " << to_string(t[i].event);
    EXPECT_EQ(t[i].next >> static_cast<int>(TxState::Count), 0);
    EXPECT_EQ(tx_action(t[i].state, t[i].event), t[i].action);
  }
  const RxRow* r = rx_rows(&n);
  seen.clear();
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(seen.insert({static_cast<int>(r[i].state), static_cast<int>(r[i].event)}).second);
    EXPECT_NE(r[i].next, 0);
    EXPECT_EQ(rx_action(r[i].state, r[i].event), r[i].action);
  }
  // The receiver answers every event in every state; the sender's undefined pairs are the
  // ones its states exclude (nothing is on the wire or timed while our Hello is unanswered).
  for (int s = 0; s < static_cast<int>(RxState::Count); ++s)
    for (int e = 0; e < static_cast<int>(RxEvent::Count); ++e)
      EXPECT_NE(rx_action(static_cast<RxState>(s), static_cast<RxEvent>(e)), RxAction::Undefined);
  EXPECT_EQ(tx_action(TxState::Greeting, TxEvent::Left), TxAction::Undefined);
  EXPECT_EQ(tx_action(TxState::Greeting, TxEvent::Timeout), TxAction::Undefined);
  EXPECT_EQ(tx_action(TxState::Greeting, TxEvent::ResendReq), TxAction::Undefined);
  EXPECT_EQ(tx_action(TxState::Sending, TxEvent::Timeout), TxAction::Expire);
}

TEST(Gbn, AnUndefinedPairIsAHardErrorNamingTheNodesStateAndEvent) {
  Fixture f;
  Recorder out;
  Endpoint e(params(), f.n, out);
  e.restart(1);  // Greeting node 1
  EXPECT_DEATH(e.left(1), "node 0 with node 1: undefined sender transition: event Left in state Greeting");
}

TEST(Gbn, PacketsAreNumberedSentAndCollectedByRecvP) {
  Fixture f;
  Recorder out;
  Endpoint e(params(), f.n, out);
  for (uint32_t i = 0; i < 3; ++i) e.submit(1, cmd_packet(i));
  ASSERT_EQ(out.sent.size(), 3u);
  for (uint8_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out.sent[i].p.end_p, i + 1);
    EXPECT_TRUE(out.sent[i].p.ctrl_p & kSequenced);
    EXPECT_FALSE(out.sent[i].p.ctrl_p & kAckReq);  // TH1 = 4 not reached
  }
  EXPECT_EQ(out.progress_, std::vector<uint32_t>{1});  // the first outstanding packet starts the clock
  e.left(1);
  ASSERT_EQ(out.timers.size(), 1u);
  EXPECT_EQ(out.timers[0].t, Timer::Ack);
  EXPECT_DOUBLE_EQ(out.timers[0].us, 100);
  const uint64_t gen = out.timers[0].tag;
  EXPECT_TRUE(e.ack_timer_live(1, gen));
  out.clear();
  // An acknowledgement for two of them: collected, the timer re-armed for the third.
  EXPECT_FALSE(e.frame(1, kAckOnly, 0, 2));
  EXPECT_EQ(e.unacked(1).size(), 1u);
  EXPECT_EQ(e.unacked(1).front().end_p, 3);
  EXPECT_EQ(out.progress_, std::vector<uint32_t>{1});
  EXPECT_EQ(out.released, std::vector<uint32_t>{1});
  ASSERT_EQ(out.timers.size(), 1u);
  EXPECT_FALSE(e.ack_timer_live(1, gen));  // the old generation is void
  // A RECV_P we never sent collects nothing.
  out.clear();
  EXPECT_FALSE(e.frame(1, kAckOnly, 0, 9));
  EXPECT_EQ(e.unacked(1).size(), 1u);
  EXPECT_TRUE(out.released.empty());
  // The last one: nothing outstanding, the timer stops.
  EXPECT_FALSE(e.frame(1, kAckOnly, 0, 3));
  EXPECT_TRUE(e.unacked(1).empty());
  EXPECT_EQ(e.buffers_used(), 0u);
}

TEST(Gbn, AnAckRequestGoesEveryTh1UncollectedPacketsAndTheWindowIsTh2) {
  Fixture f;
  Recorder out;
  Endpoint e(params(), f.n, out);
  for (uint32_t i = 0; i < 8; ++i) {
    EXPECT_FALSE(e.window_full(1));
    e.submit(1, cmd_packet(i));
  }
  EXPECT_TRUE(e.window_full(1));
  std::vector<int> asked;
  for (const Sent& s : out.sent)
    if (s.p.ctrl_p & kAckReq) asked.push_back(s.p.end_p);
  EXPECT_EQ(asked, (std::vector<int>{4, 8}));  // TH1 = 4; not again within TH1 of the last
  EXPECT_TRUE(e.ack_pending(1));
  e.frame(1, kAckOnly, 0, 8);
  EXPECT_FALSE(e.ack_pending(1));
  EXPECT_FALSE(e.window_full(1));
}

TEST(Gbn, ALackOfBuffersHalvesTh1AndAsksOtherPeersForAcks) {
  Fixture f;
  Recorder out;
  Params p = params(3, 0);
  p.tx_buffers = 4;  // above 3 in use is a lack
  p.th1 = 8;
  p.th2 = 100;
  Endpoint e(p, f.n, out);
  e.submit(2, cmd_packet(0));
  for (uint32_t i = 0; i < 2; ++i) e.submit(1, cmd_packet(i));
  EXPECT_EQ(e.th1(1), 8u);
  out.clear();
  e.submit(1, cmd_packet(3));  // 4 in use > 3
  EXPECT_EQ(e.th1(1), 4u);
  EXPECT_EQ(e.th1(2), 4u);
  EXPECT_EQ(f.count("th1_cuts"), 3u);  // peers 0 (ourselves), 1 and 2
  ASSERT_EQ(out.sent.size(), 2u);
  EXPECT_EQ(out.sent[0].peer, 2u);  // peer 2 has one outstanding: asked first
  EXPECT_EQ(out.sent[0].p.ctrl_p, kAckOnly | kAckReq);
  EXPECT_EQ(out.sent[1].peer, 1u);
  EXPECT_EQ(out.sent[1].p.end_p, 3);
  // A peer's TH1 doubles back when it collects with buffers plentiful again (below a quarter
  // in use): not peer 1's (peer 2 still holds one), peer 2's (none left).
  e.frame(1, kAckOnly, 0, 3);
  EXPECT_EQ(e.th1(1), 4u);
  e.frame(2, kAckOnly, 0, 1);
  EXPECT_EQ(e.th1(2), 8u);
  EXPECT_EQ(e.th1(1), 4u);
}

TEST(Gbn, ATimeoutWithNothingAskedPollsThenTheNextResendsHandshakedUpToWhatWasOnTheWire) {
  Fixture f;
  Recorder out;
  Endpoint e(params(), f.n, out);
  for (uint32_t i = 0; i < 2; ++i) e.submit(1, cmd_packet(i));
  e.left(1);
  out.clear();
  e.timeout(1);  // the tail of a stream below TH1: ask, do not resend
  ASSERT_EQ(out.sent.size(), 1u);
  EXPECT_EQ(out.sent[0].p.ctrl_p, kAckOnly | kAckReq);
  EXPECT_EQ(f.count("ack_polls"), 1u);
  EXPECT_EQ(e.tx_state(1), TxState::Sending);
  out.clear();
  e.timeout(1);  // the ack request was lost too: resend the oldest, handshaked
  EXPECT_EQ(e.tx_state(1), TxState::Resending);
  EXPECT_EQ(f.count("timeouts"), 1u);
  EXPECT_EQ(f.count("unresponsive"), 1u);  // max_timeouts = 2 in a row
  ASSERT_EQ(out.sent.size(), 1u);
  EXPECT_EQ(out.sent[0].p.end_p, 1);
  EXPECT_EQ(out.sent[0].p.ctrl_p & (kHandshake | kAckReq), kHandshake | kAckReq);
  out.clear();
  e.submit(1, cmd_packet(2));  // requested during the resend: waits
  EXPECT_TRUE(out.sent.empty());
  e.frame(1, kAckOnly, 0, 1);  // the handshake answered: the next of the resend
  ASSERT_EQ(out.sent.size(), 1u);
  EXPECT_EQ(out.sent[0].p.end_p, 2);
  EXPECT_TRUE(out.sent[0].p.ctrl_p & kHandshake);
  out.clear();
  e.frame(1, kAckOnly, 0, 2);  // resend done: what waited goes out normally
  EXPECT_EQ(e.tx_state(1), TxState::Sending);
  ASSERT_EQ(out.sent.size(), 1u);
  EXPECT_EQ(out.sent[0].p.end_p, 3);
  EXPECT_FALSE(out.sent[0].p.ctrl_p & kHandshake);
}

TEST(Gbn, RetriesBackOffFromMaxTimeoutsUpToTheCap) {
  Fixture f;
  Recorder out;
  Endpoint e(params(), f.n, out);
  EXPECT_DOUBLE_EQ(e.retry_us(0), 100);
  EXPECT_DOUBLE_EQ(e.retry_us(1), 100);
  EXPECT_DOUBLE_EQ(e.retry_us(2), 200);
  EXPECT_DOUBLE_EQ(e.retry_us(3), 400);
  EXPECT_DOUBLE_EQ(e.retry_us(4), 800);
  EXPECT_DOUBLE_EQ(e.retry_us(5), 1000);
  EXPECT_DOUBLE_EQ(e.retry_us(1000), 1000);
}

TEST(Gbn, TheReceiverAcceptsInOrderReacksDuplicatesAndAsksOnceAfterAGap) {
  Fixture f;
  Recorder out;
  Endpoint e(params(), f.n, out);
  EXPECT_EQ(e.classify(1, 1), Order::InOrder);
  EXPECT_TRUE(e.data(1, Order::InOrder, 1, true));
  EXPECT_EQ(out.arrived_[1], 1);
  EXPECT_EQ(e.classify(1, 1), Order::Duplicate);
  EXPECT_EQ(e.classify(1, 129), Order::Duplicate);  // 128 behind
  EXPECT_EQ(e.classify(1, 128), Order::Gap);        // 127 ahead
  EXPECT_EQ(e.classify(1, 3), Order::Gap);
  out.clear();
  EXPECT_FALSE(e.data(1, Order::Duplicate, 1, true));
  ASSERT_EQ(out.sent.size(), 1u);
  EXPECT_EQ(out.sent[0].p.ctrl_p, kAckOnly);
  out.clear();
  EXPECT_FALSE(e.data(1, Order::Gap, 3, true));
  EXPECT_EQ(e.rx_state(1), RxState::GapAsked);
  ASSERT_EQ(out.sent.size(), 1u);
  EXPECT_EQ(out.sent[0].p.ctrl_p, kAckOnly | kResendReq);
  ASSERT_EQ(out.timers.size(), 1u);
  EXPECT_EQ(out.timers[0].t, Timer::Resend);
  EXPECT_EQ(out.timers[0].tag, 1u);  // the count it asked at
  out.clear();
  EXPECT_FALSE(e.data(1, Order::Gap, 4, true));  // asked once already
  EXPECT_TRUE(out.sent.empty());
  EXPECT_EQ(f.count("gap"), 2u);
  EXPECT_EQ(f.count("dup"), 1u);
  // The request's timer: with nothing arrived since, a gap may ask again.
  e.resend_timer(1, 1);
  EXPECT_EQ(e.rx_state(1), RxState::InStep);
  EXPECT_FALSE(e.data(1, Order::Gap, 4, true));
  EXPECT_EQ(out.sent.size(), 1u);
  // An in-order packet that cannot be taken (no room) changes nothing; with room it is taken
  // and ends the gap; a later timer of the old request does nothing.
  EXPECT_FALSE(e.data(1, Order::InOrder, 2, false));
  EXPECT_EQ(e.arrived(1), 1);
  EXPECT_EQ(e.rx_state(1), RxState::GapAsked);
  EXPECT_TRUE(e.data(1, Order::InOrder, 2, true));
  EXPECT_EQ(e.rx_state(1), RxState::InStep);
  e.resend_timer(1, 1);
  EXPECT_EQ(e.rx_state(1), RxState::InStep);
  // A packet asking for an acknowledgement that nothing answered gets one.
  out.clear();
  e.unanswered(1);
  ASSERT_EQ(out.sent.size(), 1u);
  EXPECT_EQ(out.sent[0].p.ctrl_p, kAckOnly);
}

TEST(Gbn, ARestartedNodeGreetsEveryPeerHoldsItsPacketsAndDropsStaleFramesUntilAnswered) {
  Fixture f;
  Recorder out;
  Endpoint e(params(3, 1), f.n, out);
  e.submit(0, cmd_packet(0));
  out.clear();
  e.restart(5);
  EXPECT_TRUE(e.unacked(0).empty());
  ASSERT_EQ(out.sent.size(), 2u);  // peers 0 and 2, not ourselves
  for (const Sent& s : out.sent) {
    EXPECT_EQ(s.p.ctrl_p, kAckOnly | kHello | kNoFlow | kAckReq);
    EXPECT_EQ(s.p.end_p, 5);
  }
  EXPECT_EQ(out.timers.size(), 2u);
  EXPECT_EQ(e.tx_state(0), TxState::Greeting);
  out.clear();
  e.submit(0, cmd_packet(1));  // waits for the HelloAck
  EXPECT_TRUE(out.sent.empty());
  EXPECT_FALSE(e.frame(0, kAckOnly, 0, 1));  // stale
  EXPECT_EQ(f.count("stale"), 1u);
  EXPECT_EQ(e.unacked(0).size(), 1u);
  e.hello_timer(0);  // unanswered: again, backing off
  ASSERT_EQ(out.sent.size(), 1u);
  EXPECT_EQ(f.count("hellos"), 3u);
  out.clear();
  EXPECT_FALSE(e.frame(0, kAckOnly | kHello | kNoFlow, 4, 0));  // the HelloAck of an older incarnation
  EXPECT_EQ(e.tx_state(0), TxState::Greeting);
  EXPECT_FALSE(e.frame(0, kAckOnly | kHello | kNoFlow, 5, 7));  // ours: numbering goes on from 7
  EXPECT_EQ(e.tx_state(0), TxState::Sending);
  EXPECT_EQ(e.arrived(0), 7);
  EXPECT_EQ(out.arrived_[0], 7);
  ASSERT_EQ(out.sent.size(), 1u);  // what waited goes out
  EXPECT_EQ(out.sent[0].p.end_p, 1);
  out.clear();
  e.hello_timer(0);  // answered: the timer does nothing
  EXPECT_TRUE(out.sent.empty());
}

TEST(Gbn, APeersHelloAbandonsWhatItNeverAcknowledgedOnceAndIsAlwaysAnswered) {
  Fixture f;
  Recorder out;
  Endpoint e(params(), f.n, out);
  for (uint32_t i = 0; i < 3; ++i) e.submit(1, cmd_packet(i));
  e.data(1, Order::InOrder, 1, true);
  out.clear();
  EXPECT_FALSE(e.frame(1, kAckOnly | kHello | kNoFlow | kAckReq, 2, 0));
  EXPECT_TRUE(e.unacked(1).empty());
  EXPECT_EQ(e.buffers_used(), 0u);
  EXPECT_EQ(f.count("abandoned"), 3u);
  EXPECT_EQ(f.count("peer_resets"), 1u);
  EXPECT_EQ(e.arrived(1), 0);
  ASSERT_EQ(out.sent.size(), 1u);
  EXPECT_EQ(out.sent[0].p.ctrl_p, kAckOnly | kHello | kNoFlow);
  EXPECT_EQ(out.sent[0].p.end_p, 2);
  EXPECT_EQ(out.sent[0].p.recv_p, 3);  // our numbering goes on after the last number used
  EXPECT_EQ(out.released, std::vector<uint32_t>{1});
  out.clear();
  EXPECT_FALSE(e.frame(1, kAckOnly | kHello | kNoFlow | kAckReq, 2, 0));  // a repeat
  EXPECT_EQ(f.count("peer_resets"), 1u);
  ASSERT_EQ(out.sent.size(), 1u);
  EXPECT_EQ(out.sent[0].p.recv_p, 3);
  e.submit(1, cmd_packet(9));
  EXPECT_EQ(e.unacked(1).back().end_p, 4);
}

// Two endpoints over a channel that loses frames (at most `max_loss` in all) and delivers the
// rest in order; timers fire only when no frame is in flight, one at a time, the earliest set
// first (SPIN's `timeout` in gbn.pml). Every payload must arrive exactly once and in order.
struct Link {
  struct Port : Actions {
    Link* l;
    uint32_t self;
    void send(uint32_t peer, const Packet& p) override {
      Packet q = p;
      if (!(q.ctrl_p & kHello)) q.recv_p = l->e[self]->arrived(peer);  // as the host stamps every frame
      l->wire.push_back({self, peer, q});
    }
    void set_timer(Timer t, uint32_t peer, double, uint64_t tag) override { l->timers.push_back({self, t, peer, tag}); }
    void progress(uint32_t) override {}
    void arrived(uint32_t, uint8_t) override {}
    void release(uint32_t) override {}
  };
  struct Frame {
    uint32_t from, to;
    Packet p;
  };
  struct Pending {
    uint32_t node;
    Timer t;
    uint32_t peer;
    uint64_t tag;
  };
  Fixture f0, f1;
  Port p0, p1;
  std::unique_ptr<Endpoint> e[2];
  std::deque<Frame> wire;
  std::vector<Pending> timers;
  std::vector<uint32_t> delivered;
  Link(const Params& base) {
    p0.l = p1.l = this;
    p0.self = 0;
    p1.self = 1;
    Params a = base, b = base;
    a.self = 0;
    b.self = 1;
    e[0] = std::make_unique<Endpoint>(a, f0.n, p0);
    e[1] = std::make_unique<Endpoint>(b, f1.n, p1);
  }
  void receive(const Frame& fr) {
    Endpoint& E = *e[fr.to];
    if (!E.frame(fr.from, fr.p.ctrl_p, fr.p.end_p, fr.p.recv_p)) return;
    const Order o = E.classify(fr.from, fr.p.end_p);
    if (E.data(fr.from, o, fr.p.end_p, true)) delivered.push_back(fr.p.dst_ptask);
    else return;
    if (fr.p.ctrl_p & kAckReq) E.unanswered(fr.from);
  }
};

TEST(Gbn, TwoEndpointsOverALossyChannelDeliverEveryPayloadOnceAndInOrder) {
  Params p = params();
  p.th1 = 3;
  p.th2 = 5;
  const uint32_t payloads = 300;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    Link L(p);
    const uint32_t max_loss = 60;
    uint32_t lost = 0, next = 0, steps = 0;
    while (L.delivered.size() < payloads || !L.e[0]->unacked(1).empty()) {
      ASSERT_LT(++steps, 200000u) << "no progress: delivered " << L.delivered.size() << ", next " << next << ", unacked "
                                   << L.e[0]->unacked(1).size() << ", wire " << L.wire.size() << ", timers " << L.timers.size()
                                   << ", tx " << to_string(L.e[0]->tx_state(1)) << ", rx " << to_string(L.e[1]->rx_state(0))
                                   << ", arrived " << int(L.e[1]->arrived(0)) << ", sent " << int(L.e[0]->sent(1));
      // Whatever can happen now: send while the window has room, or take a frame off the wire.
      const bool can_send = next < payloads && !L.e[0]->window_full(1);
      if (can_send && (L.wire.empty() || rng() % 2)) {
        L.e[0]->submit(1, cmd_packet(next++));
        continue;
      }
      if (!L.wire.empty()) {
        Link::Frame fr = L.wire.front();
        L.wire.pop_front();
        if (fr.p.ctrl_p & kSequenced && fr.from == 0) L.e[0]->left(1);  // it left the MAC
        if (lost < max_loss && rng() % 5 == 0) {
          ++lost;
          continue;
        }
        L.receive(fr);
        continue;
      }
      // Nothing in flight: the earliest live timer fires.
      bool fired = false;
      while (!L.timers.empty() && !fired) {
        Link::Pending t = L.timers.front();
        L.timers.erase(L.timers.begin());
        Endpoint& E = *L.e[t.node];
        if (t.t == Timer::Ack && E.ack_timer_live(t.peer, t.tag)) {
          E.timeout(t.peer);
          fired = true;
        } else if (t.t == Timer::Resend) {
          E.resend_timer(t.peer, static_cast<uint8_t>(t.tag));
          fired = E.rx_state(t.peer) == RxState::InStep;
        }
      }
      // Idle, and no live timer: packets outstanding would wait for ever.
      if (!fired && L.wire.empty()) {
        ASSERT_TRUE(L.e[0]->unacked(1).empty()) << "stuck with " << L.e[0]->unacked(1).size() << " outstanding";
      }
    }
    EXPECT_GT(lost, 10u);  // the channel really lost frames, and the sender really recovered them
    EXPECT_GT(L.f0.count("retransmissions") + L.f0.count("ack_polls"), 0u);
    ASSERT_EQ(L.delivered.size(), payloads);
    for (uint32_t i = 0; i < payloads; ++i) ASSERT_EQ(L.delivered[i], i);
    EXPECT_EQ(L.e[0]->buffers_used(), 0u);
  }
}

}  // namespace
}  // namespace mbpsim::mbcf::gbn
