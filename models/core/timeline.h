// One shared resource (a memory port, a bus) whose time is booked ahead of use. A DMA engine
// books its transfer's time when the descriptor is posted, which may be long before the
// transfer runs (a deep descriptor ring). A booking made later but wanting an earlier start
// takes the gaps the earlier bookings left, in whole grants (an SDRAM burst, a bus burst), as
// an arbiter that interleaves requests grant by grant would; it does not queue behind every
// booking made before it. A booking, once made, never moves (its end was promised to its
// engine).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>

namespace mbpsim {

class Timeline {
 public:
  // Books `total` ps starting no earlier than `at`. The time is taken in pieces of whole
  // `quantum`s (grants), except the last piece, which is whatever remains; each piece takes
  // the earliest gap that holds it, so a transfer that fits the first gap after `at` is one
  // piece. `quantum` 0: one piece. Returns the end of the last piece.
  uint64_t book(uint64_t at, uint64_t total, uint64_t quantum);
  // The earliest start at or after `at` of a gap holding `dur` whole; nothing is booked.
  uint64_t first_fit(uint64_t at, uint64_t dur) const;
  // Forgets the bookings that ended by `t` (the simulated present, before which nothing can be
  // booked any more): keeps the set small. Nothing is booked before the latest end forgotten.
  void forget_before(uint64_t t);
  size_t pieces() const { return busy_.size(); }  // disjoint busy intervals held

 private:
  // The first gap at or after `p`: moves `p` past a booking holding it; returns the booking
  // after the gap (end() when the gap never ends).
  std::map<uint64_t, uint64_t>::const_iterator gap_at(uint64_t& p) const;
  void insert(uint64_t s, uint64_t e);
  std::map<uint64_t, uint64_t> busy_;  // start -> end: disjoint and never touching
  uint64_t floor_ = 0;                 // the latest end forgotten
};

}  // namespace mbpsim
