#include "models/mbp2/uli.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"

namespace mbpsim::mbp2 {

Uli::Uli(Kli& kli, Stats& st, const std::string& n)
    : Unit(n),
      kli_(kli),
      rings_(st.counter(n + ".doorbells", "doorbell writes accepted")),
      rejected_(st.counter(n + ".rejected", "doorbell writes through an alias the OS has given no task (ignored)")) {}

namespace {
std::array<uint8_t, 4> be_bytes(uint32_t v) {
  return {static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
}
}  // namespace

uint64_t Uli::assign(uint32_t alias, uint32_t ptask, uint64_t at) {
  if (alias >= Kli::kAliases) internal_error("doorbell alias " + std::to_string(alias) + " beyond the alias table");
  const auto b = be_bytes(ptask + 1);
  return kli_.write(at, Kli::kAliasTable + 4 * alias, b.data(), 4);
}

uint64_t Uli::revoke(uint32_t alias, uint64_t at) {
  if (alias >= Kli::kAliases) return at;
  const auto b = be_bytes(0);
  return kli_.write(at, Kli::kAliasTable + 4 * alias, b.data(), 4);
}

int64_t Uli::ring(uint32_t alias) {
  const uint32_t e = alias < Kli::kAliases ? kli_.load32(Kli::kAliasTable + 4 * alias) : 0;
  if (e == 0) {
    rejected_.inc();
    return -1;
  }
  rings_.inc();
  return e - 1;
}

int64_t Uli::alias_of(uint32_t ptask) const {
  for (uint32_t a = 0; a < Kli::kAliases; ++a)
    if (kli_.load32(Kli::kAliasTable + 4 * a) == ptask + 1) return a;
  return -1;
}

}  // namespace mbpsim::mbp2
