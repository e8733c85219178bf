#include "models/mbp2/ocu.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"

namespace mbpsim::mbp2 {

Ocu::Ocu(uint32_t registers, Stats& st, const std::string& name)
    : Unit(name),
      next_(registers, 0),
      in_order_(st.counter(name + ".in_order", "segments found in order")),
      dups_(st.counter(name + ".duplicates", "segments found entirely before the expected sequence number")),
      gaps_(st.counter(name + ".gaps", "segments found beyond the expected sequence number (one before them is missing)")) {}

void Ocu::arm(uint32_t reg, uint32_t next) { next_.at(reg) = next; }

Ocu::Order Ocu::check_end_p(uint32_t reg, uint8_t end_p) {
  const uint8_t e = static_cast<uint8_t>(end_p - next_.at(reg));
  if (e == 0) {
    in_order_.inc();
    return Order::InOrder;
  }
  if (e >= 127) {
    dups_.inc();
    return Order::Duplicate;
  }
  gaps_.inc();
  return Order::Gap;
}

Ocu::Order Ocu::check(uint32_t reg, uint32_t seq) {
  const int32_t d = static_cast<int32_t>(seq - next_.at(reg));
  if (d == 0) {
    in_order_.inc();
    return Order::InOrder;
  }
  if (d < 0) {
    dups_.inc();
    return Order::Duplicate;
  }
  gaps_.inc();
  return Order::Gap;
}

}  // namespace mbpsim::mbp2
