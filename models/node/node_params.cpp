#include "models/core/params.h"
#include "models/node/node_config.h"

#include <algorithm>

namespace mbpsim::node {

// The thesis gives no timing figures for the MBP machine's nodes, so the defaults describe a
// high-end 1997 SMP node of the kind the MBP was designed to extend (the SGI Origin 2000 node
// is the reference: 195 MHz R10000 with a 32 KiB 2-way L1 of 32-byte lines, a 1-4 MiB L2, a
// 64-bit ~100 MHz processor bus and ~80 ns DRAM). Each line says where its number comes from.
const ParamTable<NodeConfig>& NodeConfig::params() {
  static const ParamTable<NodeConfig> t = ParamTable<NodeConfig>()
      .add(&NodeConfig::procs, {"node.procs", 4, "", "processors per node on the node bus (Fig. 2.2 shows several)", 1, 64})
      .add(&NodeConfig::cpu_mhz, {"node.cpu_mhz", 200.0, "MHz", "processor clock (R10000-class, 1997)", 1, 100000})
      .add(&NodeConfig::cpi, {"node.cpi", 1.0, "cycles", "cycles per instruction of the compute between memory references", 0, 1000})
      .add(&NodeConfig::page_bytes, {"node.page_bytes", 4096, "bytes", "page size of P-TLB, C-TLB, N-TLB and the page-level directory", 256, 1 << 24})
      .add(&NodeConfig::block_bytes, {"node.block_bytes", 32, "bytes", "cache block: L1 line and the unit of transfer at every level (thesis 2.3)", 8, 256})
      .add(&NodeConfig::l1_bytes, {"node.l1_bytes", 32768, "bytes", "L1 data cache per processor (R10000: 32 KiB)", 64, 1 << 30})
      .add(&NodeConfig::l1_assoc, {"node.l1_assoc", 2, "ways", "L1 associativity (R10000: 2)", 1, 64})
      .add(&NodeConfig::l1_latency, {"node.l1_latency", 1, "cpu cycles", "L1 hit (pipelined load: one issue cycle)", 1, 100})
      .add(&NodeConfig::l2_bytes, {"node.l2_bytes", 1048576, "bytes", "L2 snoop cache per processor (1-4 MiB off-chip SRAM)", 128, 1 << 30})
      .add(&NodeConfig::l2_assoc, {"node.l2_assoc", 4, "ways", "L2 associativity", 1, 64})
      .add(&NodeConfig::l2_latency, {"node.l2_latency", 10, "cpu cycles", "L2 hit (50 ns off-chip SRAM at 200 MHz)", 1, 1000})
      .add(&NodeConfig::ptlb_entries, {"node.ptlb_entries", 64, "", "P-TLB entries (R10000: 64)", 1, 1 << 20})
      .add(&NodeConfig::ptlb_assoc, {"node.ptlb_assoc", 64, "ways", "P-TLB associativity (64: fully associative)", 1, 1 << 20})
      .add(&NodeConfig::ptlb_miss_cycles, {"node.ptlb_miss_cycles", 40, "cpu cycles", "page-table walk on a P-TLB miss (software refill handler, cached page table)", 0, 100000})
      .add(&NodeConfig::bus_mhz, {"node.bus_mhz", 100.0, "MHz", "node bus clock (SysAD: 97.5 MHz)", 1, 100000})
      .add(&NodeConfig::bus_width_bytes, {"node.bus_width_bytes", 8, "bytes", "node bus data width (64 bits)", 1, 256})
      .add(&NodeConfig::bus_arb_cycles, {"node.bus_arb_cycles", 1, "bus cycles", "arbitration", 0, 100})
      .add(&NodeConfig::bus_addr_cycles, {"node.bus_addr_cycles", 1, "bus cycles", "address phase", 1, 100})
      .add(&NodeConfig::bus_snoop_cycles, {"node.bus_snoop_cycles", 1, "bus cycles", "snoop response window (L2s and the C-TLB answer)", 0, 100})
      .add(&NodeConfig::banks, {"node.banks", 4, "", "memory banks per node, each with an MBP (Fig. 2.2)", 1, 1024})
      .add(&NodeConfig::bank_interleave_bytes, {"node.bank_interleave_bytes", 32, "bytes", "consecutive bytes per bank before the next bank (a block: fine interleaving); a block larger than this goes to one bank whole (the stripe is then a block)", 8, 1 << 24})
      .add(&NodeConfig::l3_pages, {"node.l3_pages", 0, "pages", "remote pages a node's banks can hold as L3 copies; more evict the least recently used, writing back exclusive blocks (0: no limit, memory is large next to the working set)", 0, 1e12})
      .add(&NodeConfig::bank_latency_ns, {"node.bank_latency_ns", 80.0, "ns", "DRAM access until data (1997 DRAM)", 1, 1e6})
      .add(&NodeConfig::bank_busy_ns, {"node.bank_busy_ns", 100.0, "ns", "DRAM cycle time: the bank is busy this long per access", 1, 1e6})
      .add(&NodeConfig::quantum_ns, {"node.quantum_ns", 500.0, "ns", "temporal-decoupling quantum: how far a processor runs ahead of global time on cache hits", 1, 1e9});
  return t;
}

NodeConfig::NodeConfig() { params().set_defaults(*this); }

void declare_node_params(ParamSchema& s) { NodeConfig::params().declare(s); }

NodeConfig NodeConfig::from(const Config& c) {
  NodeConfig n;
  params().load(n, c);
  auto pow2 = [&](const char* key, uint64_t v) {
    if (v == 0 || (v & (v - 1))) c.fail(key, "must be a power of two, not " + std::to_string(v));
  };
  pow2("node.page_bytes", n.page_bytes);
  pow2("node.block_bytes", n.block_bytes);
  pow2("node.bank_interleave_bytes", n.bank_interleave_bytes);
  if (n.block_bytes > n.page_bytes) c.fail("node.block_bytes", "a block cannot be larger than a page (" + std::to_string(n.page_bytes) + " bytes)");
  // A page is striped over its banks a stripe at a time (a block at least): the banks it spans
  // must be a power of two, and a stripe no larger than the page (mbp::System's addressing).
  const uint64_t stripe = std::max<uint64_t>(n.bank_interleave_bytes, n.block_bytes);
  if (stripe > n.page_bytes)
    c.fail("node.bank_interleave_bytes", std::to_string(n.bank_interleave_bytes) + " bytes per bank is more than a page (" +
                                             std::to_string(n.page_bytes) + " bytes): a page would span no bank");
  const uint64_t spans = std::min<uint64_t>(static_cast<uint64_t>(n.banks), n.page_bytes / stripe);
  if (spans & (spans - 1))
    c.fail("node.banks", "a page spans " + std::to_string(spans) + " banks (node.banks, or node.page_bytes / the bank stripe if fewer): must be a power of two");
  auto cache = [&](const char* key, uint32_t bytes, uint32_t assoc) {
    const uint64_t lines = bytes / n.block_bytes;
    if (bytes % n.block_bytes || lines < assoc || lines % assoc)
      c.fail(key, std::to_string(bytes) + " bytes do not make whole sets of " + std::to_string(assoc) +
                      " lines of " + std::to_string(n.block_bytes) + " bytes");
    pow2(key, lines / assoc);
  };
  cache("node.l1_bytes", n.l1_bytes, n.l1_assoc);
  cache("node.l2_bytes", n.l2_bytes, n.l2_assoc);
  if (n.l1_bytes > n.l2_bytes) c.fail("node.l1_bytes", "L1 must not be larger than L2 (L2 includes L1)");
  if (n.ptlb_entries % n.ptlb_assoc) c.fail("node.ptlb_assoc", "must divide node.ptlb_entries");
  pow2("node.ptlb_entries", n.ptlb_entries / n.ptlb_assoc);
  return n;
}

}  // namespace mbpsim::node
