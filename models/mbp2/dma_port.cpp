#include "models/mbp2/dma_port.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"

namespace mbpsim::mbp2 {

bool EmPort::read(uint64_t addr, uint32_t, uint8_t* out, uint32_t n) {
  if (addr + n > em_.size()) return false;
  em_.read_into(static_cast<uint32_t>(addr), out, n);
  return true;
}

bool EmPort::write(uint64_t addr, uint32_t, const uint8_t* in, uint32_t n) {
  if (addr + n > em_.size()) return false;
  em_.write(static_cast<uint32_t>(addr), in, n);
  return true;
}

}  // namespace mbpsim::mbp2
