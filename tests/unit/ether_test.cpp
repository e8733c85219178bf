// The Ethernet segment's half-duplex medium (models/net/ether.h): deference through the
// interframe gap, and the LANCE-mode gap of Sun's MACs. Each TEST is its own process.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "models/core/calendar.h"
#include "models/core/stats.h"
#include "models/net/ether.h"

namespace mbpsim::net {
namespace {

// At 10 Mb/s a bit is 100 ns: a minimum frame with its preamble is 72 bytes, 57.6 us; the gap
// is 9.6 us; the LANCE-mode gap of 16 nibble times is 6.4 us.
constexpr uint64_t kBit = 100'000;
constexpr uint64_t kFrame = 72 * 8 * kBit, kIfg = 96 * kBit, kIpg0 = 64 * kBit, kProp = 1'000'000;

struct Sent {
  uint32_t station;
  uint64_t at;
};

struct Hub {
  Calendar cal{"cal"};
  Stats stats;
  EtherSegment seg;
  std::vector<Sent> sent;
  explicit Hub(bool lance) : seg("ether", cal, config(lance), 2, stats, 1) { seg.set_rx([](uint32_t, std::vector<uint8_t>&&) {}); }
  static EtherConfig config(bool lance) {
    EtherConfig c;
    c.medium = EtherConfig::Medium::Hub;
    c.rate_mbps = 10;
    c.prop_ns = 1000;
    c.lance_mode = lance;
    return c;
  }
  void send(uint32_t s) {
    seg.send(s, 1 - s, std::vector<uint8_t>(60, 0x55), [this, s](bool ok) {
      ASSERT_TRUE(ok);
      sent.push_back(Sent{s, cal.now_ps()});
    });
  }
  void at(uint64_t t, uint32_t s, int frames = 1) {
    cal.at(t, [this, s, frames] {
      for (int i = 0; i < frames; ++i) send(s);
    });
  }
  uint64_t collisions() const { return stats.dump()["ether"]["collisions"].get<uint64_t>(); }
};

// A frame queued just after the carrier drops waits for the gap to end; it does not start in it.
TEST(EtherHub, AFrameQueuedInTheGapWaitsForItsEnd) {
  Hub h(false);
  h.at(0, 0);
  // Station 1 sees the carrier drop at kFrame + kProp and queues 2 us later, inside the gap.
  h.at(kFrame + kProp + 2'000'000, 1);
  sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_MS));
  ASSERT_EQ(h.sent.size(), 2u);
  EXPECT_EQ(h.sent[0].at, kFrame);
  // It starts at the gap's end, not when it was queued.
  EXPECT_EQ(h.sent[1].at, kFrame + kProp + kIfg + kFrame);
  EXPECT_EQ(h.collisions(), 0u);
}

// Two stations waiting for the same carrier to drop start together and collide, unless the one
// that received the frame waits the LANCE-mode gap more: then the sender of the frame goes on
// with its queue, and the other defers to its end without a collision.
TEST(EtherHub, WithoutLanceModeAStreamAndAnAnswerCollide) {
  Hub h(false);
  h.at(0, 0, 4);
  h.at(kFrame / 2, 1);  // an answer, queued while the stream's first frame is on the medium
  sc_core::sc_start(sc_core::sc_time(100, sc_core::SC_MS));
  ASSERT_EQ(h.sent.size(), 5u);
  EXPECT_GE(h.collisions(), 1u);
}

TEST(EtherHub, InLanceModeTheSenderKeepsTheMediumAndTheAnswerWaitsWithoutACollision) {
  Hub h(true);
  h.at(0, 0, 4);
  h.at(kFrame / 2, 1);
  sc_core::sc_start(sc_core::sc_time(100, sc_core::SC_MS));
  ASSERT_EQ(h.sent.size(), 5u);
  EXPECT_EQ(h.collisions(), 0u);
  // The four frames of the stream go back to back, each a gap after the last one's carrier.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(h.sent[i].station, 0u) << i;
    if (i) {
      EXPECT_EQ(h.sent[i].at - h.sent[i - 1].at, kProp + kIfg + kFrame) << i;
    }
  }
  // The answer goes when the stream is over: the gap, the LANCE-mode gap and its window.
  EXPECT_EQ(h.sent[4].station, 1u);
  EXPECT_EQ(h.sent[4].at - h.sent[3].at, kProp + kIfg + kIpg0 + kFrame);
}

}  // namespace
}  // namespace mbpsim::net
