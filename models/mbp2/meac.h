// The MEAC1024: 1024-bit modular multiplication for Diffie-Hellman (8.2).
#pragma once
#include "models/mbp2/cau.h"

namespace mbpsim::mbp2 {

// The MEAC1024: 1024-bit modular multiplication and reduction (IBM), one operation at a time.
class Meac : public Unit {
 public:
  Meac(const CryptoConfig& c, Stats& st, const std::string& name);
  uint64_t modmul_ps() const;
  // `modmuls` operations submitted from `at`: returns when the last result is ready.
  uint64_t run(uint64_t at, uint32_t modmuls);

 private:
  CryptoConfig c_;
  uint64_t free_ = 0;
  Counter &ops_, &busy_;
};

}  // namespace mbpsim::mbp2
