// The OCU: packet order checks for TCP and MBCF as frames arrive (8.2).
#pragma once
#include "models/mbp2/unit.h"

namespace mbpsim::mbp2 {

// The OCU (8.2): checks packet order for TCP and MBCF as frames arrive. It holds, per register
// (a TCP connection, or an MBCF peer), the next sequence number expected; a segment is in order,
// a duplicate (entirely before it) or beyond a gap. The PME advances the register when it
// delivers.
class Ocu : public Unit {
 public:
  enum class Order : uint8_t { InOrder, Duplicate, Gap };
  Ocu(uint32_t registers, Stats& st, const std::string& name);
  uint32_t registers() const { return static_cast<uint32_t>(next_.size()); }
  void arm(uint32_t reg, uint32_t next);
  // Sequence numbers compare in a 32-bit space (RFC 793): `seq` before `next` is a duplicate.
  Order check(uint32_t reg, uint32_t seq);
  // MBCF's mode: END_P counts packets modulo 256 and Go-back-N keeps fewer than 128
  // outstanding, so up to 128 behind the register's next (the last arrived among them) is a
  // duplicate and up to 126 beyond it is past a gap.
  Order check_end_p(uint32_t reg, uint8_t end_p);
  void advance(uint32_t reg, uint32_t next) { next_.at(reg) = next; }
  uint32_t expected(uint32_t reg) const { return next_.at(reg); }

 private:
  std::vector<uint32_t> next_;
  Counter &in_order_, &dups_, &gaps_;
};

}  // namespace mbpsim::mbp2
