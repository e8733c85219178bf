// The host's I/O bus (SBus of the SPARCstation 20, PCI of the Ultra 60): the one bus every NIC
// of a host sits on, whether the host kernel drives it (MBCF/Ether's conventional NIC) or the
// NIC runs the protocol itself (the MBP2's BIU). Its parameters (`bus.*`) are declared once,
// in io_bus.cpp.
#pragma once
#include <cstdint>

#include "models/core/config.h"
#include "models/core/params.h"

namespace mbpsim::host {

struct BusConfig {
  // Every member is a parameter of `params()`, which gives it its default.
  BusConfig();
  enum class Kind { SBus, Pci };
  Kind kind{};               // SBus: naturally aligned power-of-two bursts; PCI: any start and length
  double clock_mhz{};        // SBus 25 MHz; PCI 33 or 66
  uint32_t width_bytes{};    // SBus 4; PCI 4 or 8
  uint32_t max_burst{};      // SBus: 32-byte maximum burst; PCI: what the latency timer allows
  double overhead_cycles{};  // per burst: arbitration, address phase, acknowledgement / turnaround
  double pio_cycles{};       // one programmed single-word write by the host CPU (a doorbell)

  static const ParamTable<BusConfig>& params();
  // The bus's own consistency (burst against width and kind), failing on `c`'s keys.
  void check(const Config& c) const;
};

}  // namespace mbpsim::host
