#include "models/core/timeline.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>
#include <vector>

namespace mbpsim {

std::map<uint64_t, uint64_t>::const_iterator Timeline::gap_at(uint64_t& p) const {
  p = std::max(p, floor_);
  auto it = busy_.upper_bound(p);  // the first booking starting after p
  if (it != busy_.begin()) {
    const auto prev = std::prev(it);
    if (prev->second > p) p = prev->second;  // p is inside a booking: the gap starts at its end
  }
  return it;
}

uint64_t Timeline::first_fit(uint64_t at, uint64_t dur) const {
  uint64_t p = at;
  auto it = gap_at(p);
  while (it != busy_.end() && it->first - p < dur) {
    p = it->second;
    ++it;
  }
  return p;
}

uint64_t Timeline::book(uint64_t at, uint64_t total, uint64_t quantum) {
  uint64_t p = at;
  auto it = gap_at(p);
  if (total == 0) return p;
  // Fill the gaps from `p` on; the pieces are inserted afterwards so the walk sees the
  // bookings as they were.
  std::pair<uint64_t, uint64_t> one;
  std::vector<std::pair<uint64_t, uint64_t>> more;
  bool first = true;
  uint64_t left = total;
  for (;;) {
    const uint64_t gap = it == busy_.end() ? std::numeric_limits<uint64_t>::max() - p : it->first - p;
    uint64_t take = 0;
    if (gap >= left) take = left;
    else if (quantum != 0) take = gap / quantum * quantum;  // whole grants; gap < left, so some remain
    if (take != 0) {
      if (first) one = {p, p + take};
      else more.emplace_back(p, p + take);
      first = false;
      left -= take;
      if (left == 0) break;
    }
    p = it->second;  // the gap was too small for what is left: on past the next booking
    ++it;
  }
  const uint64_t end = more.empty() ? one.second : more.back().second;
  insert(one.first, one.second);
  for (const auto& [s, e] : more) insert(s, e);
  return end;
}

void Timeline::insert(uint64_t s, uint64_t e) {
  auto it = busy_.upper_bound(s);
  if (it != busy_.begin()) {
    auto prev = std::prev(it);
    if (prev->second >= s) {  // touches the booking before: one interval
      s = prev->first;
      e = std::max(e, prev->second);
      it = busy_.erase(prev);
    }
  }
  while (it != busy_.end() && it->first <= e) {
    e = std::max(e, it->second);
    it = busy_.erase(it);
  }
  busy_.emplace_hint(it, s, e);
}

void Timeline::forget_before(uint64_t t) {
  while (!busy_.empty() && busy_.begin()->second <= t) {
    floor_ = std::max(floor_, busy_.begin()->second);
    busy_.erase(busy_.begin());
  }
}

}  // namespace mbpsim
