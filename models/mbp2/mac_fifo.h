// The MAC's frame FIFO as a DMA port (8.2).
#pragma once
#include "models/mbp2/dma_port.h"
#include "models/mbp2/em.h"

namespace mbpsim::mbp2 {

// The MAC's frame FIFO as a DMA port: a received frame waits in it, under the number `put`
// gives, until the LDMA reads it into EM; a frame the LDMA writes into it waits there, under
// the number it was written to, until the MAC `take`s it to the wire. Each frame moves whole.
class MacFifo : public DmaPort {
 public:
  uint32_t put(std::vector<uint8_t>&& frame);
  bool take(uint32_t addr, std::vector<uint8_t>* frame);
  uint32_t next() { return next_++; }  // a number for a frame the LDMA will write
  bool read(uint64_t addr, uint32_t ctx, uint8_t* out, uint32_t n) override;
  bool write(uint64_t addr, uint32_t ctx, const uint8_t* in, uint32_t n) override;
  void clear() { frames_.clear(); }
  size_t size() const { return frames_.size(); }

 private:
  uint32_t next_ = 0;
  std::map<uint32_t, std::vector<uint8_t>> frames_;
};

}  // namespace mbpsim::mbp2
