// The one kind of calendar of the picosecond domain: a queue of typed, timestamped events,
// earliest first, events of one time in the order they were pushed (so a run is
// deterministic). Its owner runs it from one SC_METHOD and arms that method's event at the
// earliest time: the cluster's closure calendar (calendar.h: EventQueue<std::function<void()>>)
// and the MBP machine's (mbp::System: EventQueue<its event record>, no allocation per event).
// The network keeps a calendar of its own clock domain, a wheel of per-cycle buckets
// (net::Network). Nothing ticks: an empty queue arms nothing.
#pragma once
#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

namespace mbpsim {

template <class E>
class EventQueue {
 public:
  // Adds `e` at `t_ps`. Returns whether it is now the earliest event (its owner arms for it).
  bool push(uint64_t t_ps, E e) {
    const bool earliest = q_.empty() || t_ps < q_.top().t;
    q_.push(Entry{t_ps, seq_++, std::move(e)});
    return earliest;
  }
  bool empty() const { return q_.empty(); }
  size_t size() const { return q_.size(); }
  // The earliest event's time (the queue must not be empty).
  uint64_t next_ps() const { return q_.top().t; }
  // Moves the earliest event into `out` and removes it, if it is due at `now_ps`.
  bool pop_due(uint64_t now_ps, E& out) {
    if (q_.empty() || q_.top().t > now_ps) return false;
    out = std::move(const_cast<Entry&>(q_.top()).e);  // top() is const; the entry is popped next
    q_.pop();
    return true;
  }

 private:
  struct Entry {
    uint64_t t, seq;
    E e;
    bool operator>(const Entry& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> q_;
  uint64_t seq_ = 0;
};

}  // namespace mbpsim
