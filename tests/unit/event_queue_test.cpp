// The picosecond domain's one kind of calendar (models/core/event_queue.h) and the closure
// calendar built on it (models/core/calendar.h): earliest first, ties in the order pushed,
// nothing popped before it is due.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "models/core/calendar.h"
#include "models/core/event_queue.h"

namespace mbpsim {
namespace {

struct Rec {
  char tag;
  uint32_t node;
};

TEST(EventQueue, EarliestFirstAndTiesInPushOrder) {
  EventQueue<Rec> q;
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(q.push(50, {'a', 0}));   // the first is the earliest
  EXPECT_FALSE(q.push(70, {'b', 1}));  // later: the owner's arming stands
  EXPECT_TRUE(q.push(20, {'c', 2}));   // earlier than every other: re-arm
  EXPECT_FALSE(q.push(50, {'d', 3}));  // a tie is not earlier
  EXPECT_FALSE(q.push(20, {'e', 4}));
  EXPECT_EQ(q.size(), 5u);
  EXPECT_EQ(q.next_ps(), 20u);
  std::string order;
  Rec r{};
  while (q.pop_due(1000, r)) order += r.tag;
  EXPECT_EQ(order, "ceadb");
  EXPECT_TRUE(q.empty());
}

TEST(EventQueue, NothingIsPoppedBeforeItIsDue) {
  EventQueue<Rec> q;
  q.push(100, {'x', 7});
  q.push(300, {'y', 8});
  Rec r{'-', 0};
  EXPECT_FALSE(q.pop_due(99, r));
  EXPECT_EQ(r.tag, '-');  // untouched
  EXPECT_TRUE(q.pop_due(100, r));
  EXPECT_EQ(r.tag, 'x');
  EXPECT_EQ(r.node, 7u);
  EXPECT_FALSE(q.pop_due(299, r));
  EXPECT_EQ(q.next_ps(), 300u);
  EXPECT_TRUE(q.pop_due(300, r));
  EXPECT_FALSE(q.pop_due(UINT64_MAX, r));
}

TEST(EventQueue, HoldsMoveOnlyEvents) {
  EventQueue<std::unique_ptr<int>> q;
  q.push(5, std::make_unique<int>(41));
  q.push(1, std::make_unique<int>(40));
  std::unique_ptr<int> p;
  ASSERT_TRUE(q.pop_due(5, p));
  EXPECT_EQ(*p, 40);
  ASSERT_TRUE(q.pop_due(5, p));
  EXPECT_EQ(*p, 41);
}

// The closure calendar on SystemC's clock: events run at their time, those of one time in the
// order scheduled (also when scheduled by an event of that time), a time in the past is now.
TEST(Calendar, RunsClosuresAtTheirTimeInScheduleOrder) {
  Calendar cal("cal");
  std::vector<std::string> log;
  auto note = [&](const std::string& what) { log.push_back(std::to_string(cal.now_ps()) + what); };
  cal.at(2000, [&] { note("b"); });
  cal.at(1000, [&] {
    note("a");
    cal.at(1000, [&] { note("a2"); });  // same time, scheduled while it runs: after a1
    cal.at(500, [&] { note("past"); });  // in the past: now, after a2
    cal.after(1000, [&] { note("c"); });  // 2000, after b
  });
  cal.at(1000, [&] { note("a1"); });
  EXPECT_FALSE(cal.idle());
  sc_core::sc_start(10, sc_core::SC_NS);
  const std::vector<std::string> want{"1000a", "1000a1", "1000a2", "1000past", "2000b", "2000c"};
  EXPECT_EQ(log, want);
  EXPECT_EQ(cal.events(), 6u);
  EXPECT_TRUE(cal.idle());
}

}  // namespace
}  // namespace mbpsim
