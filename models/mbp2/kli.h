// The KLI: the host kernel's programmed access to the kernel area of EM (8.2).
#pragma once
#include "models/mbp2/host_bus.h"

namespace mbpsim::mbp2 {

// The KLI (8.2): part of EM mapped into the host's physical address space, so kernel programs
// and the PME share variables there. The kernel area holds real bytes; the host reaches them
// with programmed single-word accesses across the host bus, the PME directly.
class Kli : public Unit {
 public:
  static constexpr uint32_t kAliasTable = 0;       // ULI: one u32 per alias, ptask + 1 (0: none)
  static constexpr uint32_t kAliases = 1024;       // (4 KiB; the MBP2's connection table follows)
  static constexpr uint32_t kBytes = 64 * 1024;    // the kernel area
  Kli(HostBus& bus, Stats& st, const std::string& name);
  // The host kernel writes / reads `n` bytes at `off` from time `at`: returns when done.
  uint64_t write(uint64_t at, uint32_t off, const uint8_t* p, uint32_t n);
  uint64_t read(uint64_t at, uint32_t off, uint8_t* p, uint32_t n);
  // The PME's view of the same bytes (it reads EM directly).
  uint32_t load32(uint32_t off) const;
  void store32(uint32_t off, uint32_t v);

 private:
  void check(uint32_t off, uint32_t n) const;
  HostBus& bus_;
  std::vector<uint8_t> mem_;
  Counter &writes_, &reads_;
};

}  // namespace mbpsim::mbp2
