// Typed node configuration (processors, P-TLB, L1/L2 caches, node bus, memory banks); the
// declared parameters, with their defaults' origins, live in node_params.cpp.
#pragma once
#include <cstdint>

#include "models/core/config.h"

namespace mbpsim::node {

struct NodeConfig {
  int procs = 4;
  double cpu_mhz = 200.0;
  double cpi = 1.0;
  uint32_t page_bytes = 4096;
  uint32_t block_bytes = 32;
  uint32_t l1_bytes = 32768, l1_assoc = 2, l1_latency = 1;
  uint32_t l2_bytes = 1 << 20, l2_assoc = 4, l2_latency = 10;
  uint32_t ptlb_entries = 64, ptlb_assoc = 64, ptlb_miss_cycles = 40;
  double bus_mhz = 100.0;
  uint32_t bus_width_bytes = 8, bus_arb_cycles = 1, bus_addr_cycles = 1, bus_snoop_cycles = 1;
  uint32_t banks = 4, bank_interleave_bytes = 32;
  uint64_t l3_pages = 0;  // remote pages the banks hold as L3 copies (0: no limit)
  double bank_latency_ns = 80.0, bank_busy_ns = 100.0;
  double quantum_ns = 500.0;

  // Derived times in picoseconds.
  uint64_t cpu_ps() const { return static_cast<uint64_t>(1e6 / cpu_mhz + 0.5); }
  uint64_t bus_ps() const { return static_cast<uint64_t>(1e6 / bus_mhz + 0.5); }
  uint32_t data_beats() const { return (block_bytes + bus_width_bytes - 1) / bus_width_bytes; }
  static NodeConfig from(const Config& c);
};

void declare_node_params(ParamSchema& s);

}  // namespace mbpsim::node
