// The ICU: message queues between the host and the PME (8.2).
#pragma once
#include "models/mbp2/unit.h"

namespace mbpsim::mbp2 {

// The ICU (8.2): interrupts between the host CPU and the PME, each carrying a 64-bit message,
// queued in order in each direction.
class Icu : public Unit {
 public:
  Icu(Stats& st, const std::string& name);
  void to_host(uint64_t msg);
  void to_pme(uint64_t msg);
  // The oldest message for each side; false when none is waiting.
  bool take_for_host(uint64_t* msg);
  bool take_for_pme(uint64_t* msg);

 private:
  std::deque<uint64_t> host_, pme_;
  Counter &to_host_, &to_pme_;
};

}  // namespace mbpsim::mbp2
