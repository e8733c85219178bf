// Parameters of the host I/O bus. Defaults: the SPARCstation 20's SBus (6.2.1), 25 MHz, 32 bits,
// 32-byte bursts.
#include "models/host/io_bus.h"

namespace mbpsim::host {

const ParamTable<BusConfig>& BusConfig::params() {
  static const ParamTable<BusConfig> t = ParamTable<BusConfig>()
      .add_choice(&BusConfig::kind, {"bus.kind", "sbus", "", "host I/O bus: sbus (bursts are naturally aligned powers of two) | pci (bursts of any start and length); timing comes from the fields below"},
                  {{"sbus", Kind::SBus}, {"pci", Kind::Pci}})
      .add(&BusConfig::clock_mhz, {"bus.clock_mhz", 25.0, "MHz", "I/O bus clock (SBus of the SS20: 25 MHz)", 1, 1e5})
      .add(&BusConfig::width_bytes, {"bus.width_bytes", 4, "bytes", "data bytes per bus cycle (SBus: 32 bits)", 1, 64})
      .add(&BusConfig::max_burst, {"bus.burst_bytes", 32, "bytes", "longest DMA burst (SBus: 32 bytes)", 4, 4096})
      .add(&BusConfig::overhead_cycles, {"bus.overhead_cycles", 3.0, "cycles", "per burst: arbitration, address phase, acknowledgement", 0, 1000})
      .add(&BusConfig::pio_cycles, {"bus.pio_cycles", 20.0, "cycles", "a programmed single-word write by the host across the I/O bus (a doorbell), which holds the CPU until acknowledged: the SS20's MBus-to-SBus bridge crossing, arbitration, address, data, acknowledgement (about 0.8 us; an estimate)", 1, 1e6});
  return t;
}

BusConfig::BusConfig() { params().set_defaults(*this); }

void BusConfig::check(const Config& c) const {
  if (kind == Kind::SBus && (max_burst & (max_burst - 1))) c.fail("bus.burst_bytes", "an SBus burst is a power of two");
  if (max_burst < width_bytes) c.fail("bus.burst_bytes", "must be at least bus.width_bytes");
}

}  // namespace mbpsim::host
