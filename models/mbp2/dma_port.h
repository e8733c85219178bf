// Where a DMA engine moves bytes from or to (8.3.4). EM as such a port is EmPort (em.h), host
// memory the BIU (host_bus.h).
#pragma once
#include <cstdint>

namespace mbpsim::mbp2 {

// Where a DMA engine moves bytes from or to (8.3.4): EM (addresses are offsets in it), the MAC
// (addresses name a frame in its FIFO), host memory. A port refuses (false) an address it does
// not have; the engine then marks the descriptor with kError and moves nothing.
class DmaPort {
 public:
  virtual ~DmaPort() = default;
  // `ctx`: the descriptor's context (whose address space a host address is in).
  virtual bool read(uint64_t addr, uint32_t ctx, uint8_t* out, uint32_t n) = 0;
  virtual bool write(uint64_t addr, uint32_t ctx, const uint8_t* in, uint32_t n) = 0;
  // Time the port's far side added to the accesses since last asked (a TLM-2.0 target's
  // annotated delay): the engine completes that much later. 0 for a port of the card itself.
  virtual uint64_t take_delay_ps() { return 0; }
};

}  // namespace mbpsim::mbp2
