// Typed node configuration (processors, P-TLB, L1/L2 caches, node bus, memory banks); the
// parameters, with their defaults' origins, are declared once, in node_params.cpp.
#pragma once
#include <cstdint>

#include "models/core/config.h"
#include "models/core/params.h"

namespace mbpsim::node {

struct NodeConfig {
  // Every member is a parameter of `params()`, which gives it its default.
  NodeConfig();
  int procs{};
  double cpu_mhz{};
  double cpi{};
  uint32_t page_bytes{};
  uint32_t block_bytes{};
  uint32_t l1_bytes{}, l1_assoc{}, l1_latency{};
  uint32_t l2_bytes{}, l2_assoc{}, l2_latency{};
  uint32_t ptlb_entries{}, ptlb_assoc{}, ptlb_miss_cycles{};
  double bus_mhz{};
  uint32_t bus_width_bytes{}, bus_arb_cycles{}, bus_addr_cycles{}, bus_snoop_cycles{};
  uint32_t banks{}, bank_interleave_bytes{};
  uint64_t l3_pages{};  // remote pages the banks hold as L3 copies (0: no limit)
  double bank_latency_ns{}, bank_busy_ns{};
  double quantum_ns{};

  // Derived times in picoseconds.
  uint64_t cpu_ps() const { return static_cast<uint64_t>(1e6 / cpu_mhz + 0.5); }
  uint64_t bus_ps() const { return static_cast<uint64_t>(1e6 / bus_mhz + 0.5); }
  uint32_t data_beats() const { return (block_bytes + bus_width_bytes - 1) / bus_width_bytes; }
  static const ParamTable<NodeConfig>& params();
  static NodeConfig from(const Config& c);  // params() loaded, then cross-checked
};

void declare_node_params(ParamSchema& s);

}  // namespace mbpsim::node
