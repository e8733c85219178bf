// Where a DMA engine moves bytes from or to, and EM as such a port (8.3.4).
#pragma once
#include "models/mbp2/em.h"

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
};

// EM as a DMA port.
class EmPort : public DmaPort {
 public:
  explicit EmPort(Em& em) : em_(em) {}
  bool read(uint64_t addr, uint32_t ctx, uint8_t* out, uint32_t n) override;
  bool write(uint64_t addr, uint32_t ctx, const uint8_t* in, uint32_t n) override;

 private:
  Em& em_;
};

}  // namespace mbpsim::mbp2
