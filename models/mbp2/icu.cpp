#include "models/mbp2/icu.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"

namespace mbpsim::mbp2 {

Icu::Icu(Stats& st, const std::string& n)
    : Unit(n),
      to_host_(st.counter(n + ".to_host", "interrupts with a 64-bit message from the PME to the host")),
      to_pme_(st.counter(n + ".to_pme", "interrupts with a 64-bit message from the host to the PME")) {}

void Icu::to_host(uint64_t m) {
  host_.push_back(m);
  to_host_.inc();
}

void Icu::to_pme(uint64_t m) {
  pme_.push_back(m);
  to_pme_.inc();
}

bool Icu::take_for_host(uint64_t* m) {
  if (host_.empty()) return false;
  *m = host_.front();
  host_.pop_front();
  return true;
}

bool Icu::take_for_pme(uint64_t* m) {
  if (pme_.empty()) return false;
  *m = pme_.front();
  pme_.pop_front();
  return true;
}

}  // namespace mbpsim::mbp2
