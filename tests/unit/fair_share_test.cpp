// A shared resource granted in round robin, modelled as processor sharing (models/core/fair_share.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "models/core/fair_share.h"
#include "models/core/rng.h"

namespace mbpsim {
namespace {

TEST(FairShare, ATransferAloneTakesItsWorkAndTwoTogetherShare) {
  FairShare f;
  EXPECT_EQ(f.book(0, 100, 50).end(), 150u);
  EXPECT_EQ(f.wait(0), 0u);
  FairShare g;
  const auto a = g.book(0, 0, 100), b = g.book(0, 0, 100);
  EXPECT_EQ(a.end(), 200u);
  EXPECT_EQ(b.end(), 200u);
  EXPECT_EQ(g.wait(0), 200u);  // each waited 100
  // Nothing to move: over at once, nothing booked.
  EXPECT_EQ(g.book(0, 30, 0).end(), 30u);
  EXPECT_EQ(g.jobs(), 2u);
}

// One booked later shares the resource from its start: it runs at half speed and the one in
// progress is delayed by as much as it served the newcomer. Ends move later, never earlier.
TEST(FairShare, ALaterTransferDelaysTheOneInProgress) {
  FairShare f(2);
  const auto a = f.book(0, 0, 100, 0);
  EXPECT_EQ(a.end(), 100u);
  const auto b = f.book(50, 50, 20, 1);  // from 50: 20 at half speed, so until 90
  EXPECT_EQ(b.end(), 90u);
  EXPECT_EQ(a.end(), 120u);  // a served 70 by 90, 30 left alone
  EXPECT_EQ(f.wait(0), 20u);
  EXPECT_EQ(f.wait(1), 20u);
  // Booked ahead: it shares from its start only.
  const auto c = f.book(60, 110, 40, 1);  // a has 10 left at 110: both until 130, c alone to 160
  EXPECT_EQ(a.end(), 130u);
  EXPECT_EQ(c.end(), 160u);
  EXPECT_EQ(b.end(), 90u);
  // Once over, a transfer is forgotten; its end stays.
  f.book(200, 200, 10, 0);
  EXPECT_EQ(f.jobs(), 1u);
  EXPECT_EQ(a.end(), 130u);
}

// A requester paced by a slower unit (a cipher, a bus) asks for a burst only every so often:
// it gets its pace, and the greedy ones share what it leaves. One whose pace is more than an
// equal share gets the equal share.
TEST(FairShare, APacedTransferTakesItsPaceAndLeavesTheRest) {
  FairShare f;
  const auto greedy = f.book(0, 0, 100);
  const auto paced = f.book(0, 0, 30, 0, 100);  // 30 of work spread over at least 100: 30%
  EXPECT_EQ(paced.end(), 100u);                 // not delayed at all
  EXPECT_EQ(greedy.end(), 130u);                // 70 by 100, then 30 alone
  FairShare g;
  const auto a = g.book(0, 0, 100), b = g.book(0, 0, 100);
  const auto c = g.book(0, 0, 20, 0, 100);  // 20%: the two greedy ones get 40% each
  EXPECT_EQ(c.end(), 100u);
  EXPECT_EQ(a.end(), 220u);  // 40 each by 100, then 60 each at half
  EXPECT_EQ(b.end(), 220u);
  FairShare h;
  const auto d = h.book(0, 0, 80, 0, 100);  // wants 80%, gets half while the other runs
  const auto e = h.book(0, 0, 50);
  EXPECT_EQ(e.end(), 100u);  // 50 at half
  EXPECT_EQ(d.end(), 138u);  // 50 by 100, then 30 at its 80%: 37.5 more
  // Alone, a paced transfer lasts its pace: no wait.
  FairShare k;
  EXPECT_EQ(k.book(0, 10, 30, 0, 100).end(), 110u);
  EXPECT_EQ(k.wait(0), 0u);
}

// A requester that loses its power stops: what it had in progress takes no more of the
// resource, and what comes next has it alone.
TEST(FairShare, StoppedTransfersTakeNoMoreOfTheResource) {
  FairShare f;
  const auto a = f.book(0, 0, 1000);
  f.book(0, 0, 1000);
  EXPECT_EQ(a.end(), 2000u);
  f.stop_all(500);
  EXPECT_EQ(f.jobs(), 0u);
  EXPECT_EQ(a.end(), 2000u);  // (its holder was stopped too: the end is not used)
  EXPECT_EQ(f.book(500, 500, 100).end(), 600u);
}

// A programmed write wins the next arbitration: it waits for the burst in progress (at most a
// grant), holds the resource alone, and the transfers in progress stand still meanwhile.
TEST(FairShare, APriorityRequestWaitsOneGrantAndDelaysTheTransfers) {
  FairShare f;
  EXPECT_EQ(f.priority(0, 10, 5, 40), std::make_pair(uint64_t{10}, uint64_t{15}));  // idle: at once
  const auto a = f.book(20, 20, 1000);
  EXPECT_EQ(a.end(), 1020u);
  EXPECT_EQ(f.priority(100, 100, 30, 40), std::make_pair(uint64_t{140}, uint64_t{170}));
  EXPECT_EQ(a.end(), 1050u);
  // A second one at once waits for the first, then for a grant of the transfer.
  EXPECT_EQ(f.priority(100, 150, 30, 40), std::make_pair(uint64_t{170}, uint64_t{200}));
  EXPECT_EQ(a.end(), 1080u);
  // Near the end of the transfer it waits only for the transfer.
  EXPECT_EQ(f.priority(1070, 1070, 30, 40), std::make_pair(uint64_t{1080}, uint64_t{1110}));
  EXPECT_EQ(a.end(), 1080u);
}

// Against a picosecond-by-picosecond round robin over random transfers: the fluid's ends are
// within a round of the slot model's, the last end is the same (both serve whenever there is
// work), and booking each transfer when it arrives (with the present moving on) predicts the
// same ends as booking them all at the start. Seeds are logged; rerun one with
// MBPSIM_SEED=<seed>.
TEST(FairShare, RandomTransfersMatchAPicosecondRoundRobin) {
  const char* env = std::getenv("MBPSIM_SEED");
  const uint64_t first = env ? std::strtoull(env, nullptr, 10) : 1, last = env ? first : 60;
  for (uint64_t seed = first; seed <= last; ++seed) {
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
    Rng r(seed, "fair_share");
    const int n = 1 + static_cast<int>(r.below(8));
    std::vector<uint64_t> at(n), work(n);
    for (int i = 0; i < n; ++i) {
      at[i] = r.below(3000);
      work[i] = 1 + r.below(2000);
    }
    // The slot model: each picosecond goes to the next transfer in a round of those waiting,
    // newcomers joining the round's end.
    std::vector<uint64_t> left = work, rr(n, 0);
    std::vector<int> round;
    std::vector<bool> joined(n, false);
    size_t turn = 0;
    for (uint64_t t = 0, over = 0; over < static_cast<uint64_t>(n); ++t) {
      for (int i = 0; i < n; ++i)
        if (!joined[i] && at[i] <= t) {
          joined[i] = true;
          round.push_back(i);
        }
      if (round.empty()) continue;
      if (turn >= round.size()) turn = 0;
      const int i = round[turn];
      if (--left[i] == 0) {
        rr[i] = t + 1;
        ++over;
        round.erase(round.begin() + static_cast<std::ptrdiff_t>(turn));
      } else {
        ++turn;
      }
    }
    FairShare ahead, live;
    std::vector<FairShare::Booking> a(n), b(n);
    for (int i = 0; i < n; ++i) a[i] = ahead.book(0, at[i], work[i]);
    std::vector<int> by_at(n);
    for (int i = 0; i < n; ++i) by_at[i] = i;
    std::stable_sort(by_at.begin(), by_at.end(), [&](int x, int y) { return at[x] < at[y]; });
    for (int i : by_at) b[i] = live.book(at[i], at[i], work[i]);
    uint64_t last_rr = 0, last_fluid = 0;
    for (int i = 0; i < n; ++i) {
      const int64_t d = static_cast<int64_t>(a[i].end()) - static_cast<int64_t>(rr[i]);
      EXPECT_LE(std::llabs(d), 2 * n) << "seed " << seed << " transfer " << i;
      EXPECT_LE(std::llabs(static_cast<int64_t>(a[i].end()) - static_cast<int64_t>(b[i].end())), 1) << "seed " << seed << " transfer " << i;
      EXPECT_GE(a[i].end(), at[i] + work[i]) << "seed " << seed;
      last_rr = std::max(last_rr, rr[i]);
      last_fluid = std::max(last_fluid, a[i].end());
    }
    EXPECT_LE(std::llabs(static_cast<int64_t>(last_rr) - static_cast<int64_t>(last_fluid)), 1) << "seed " << seed;
  }
}

}  // namespace
}  // namespace mbpsim
