#include "models/mbp2/kli.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"

namespace mbpsim::mbp2 {

Kli::Kli(HostBus& bus, Stats& st, const std::string& n)
    : Unit(n),
      bus_(bus),
      mem_(kBytes, 0),
      writes_(st.counter(n + ".host_writes", "programmed word writes by the host kernel into EM")),
      reads_(st.counter(n + ".host_reads", "programmed word reads by the host kernel from EM")) {}

void Kli::check(uint32_t off, uint32_t n) const {
  if (static_cast<uint64_t>(off) + n > mem_.size()) internal_error("a KLI access past the kernel area of EM");
}

uint64_t Kli::write(uint64_t at, uint32_t off, const uint8_t* p, uint32_t n) {
  check(off, n);
  std::copy(p, p + n, mem_.begin() + off);
  for (uint32_t w = 0; w < (n + 3) / 4; ++w) {
    at = bus_.pio(at);
    writes_.inc();
  }
  return at;
}

uint64_t Kli::read(uint64_t at, uint32_t off, uint8_t* p, uint32_t n) {
  check(off, n);
  std::copy(mem_.begin() + off, mem_.begin() + off + n, p);
  for (uint32_t w = 0; w < (n + 3) / 4; ++w) {
    at = bus_.pio(at);  // a read waits for the data to come back: the same bus tenure
    reads_.inc();
  }
  return at;
}

uint32_t Kli::load32(uint32_t off) const {
  check(off, 4);
  return static_cast<uint32_t>(mem_[off]) << 24 | static_cast<uint32_t>(mem_[off + 1]) << 16 |
         static_cast<uint32_t>(mem_[off + 2]) << 8 | mem_[off + 3];
}

void Kli::store32(uint32_t off, uint32_t v) {
  check(off, 4);
  for (int i = 0; i < 4; ++i) mem_[off + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

}  // namespace mbpsim::mbp2
