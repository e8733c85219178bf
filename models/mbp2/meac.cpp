#include "models/mbp2/meac.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"

namespace mbpsim::mbp2 {

Meac::Meac(const CryptoConfig& c, Stats& st, const std::string& n)
    : Unit(n),
      c_(c),
      ops_(st.counter(n + ".modmuls", "1024-bit modular multiplications and reductions")),
      busy_(st.counter(n + ".busy_ps", "time the MEAC1024 computed")) {}

uint64_t Meac::modmul_ps() const { return ps_of(c_.meac_modmul_cycles, c_.meac_clock_mhz); }

uint64_t Meac::run(uint64_t at, uint32_t n) {
  const uint64_t start = std::max(at, free_);
  const uint64_t dur = n * modmul_ps();
  free_ = start + dur;
  ops_.inc(n);
  busy_.inc(dur);
  return free_;
}

}  // namespace mbpsim::mbp2
