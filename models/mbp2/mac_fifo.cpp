#include "models/mbp2/mac_fifo.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"

namespace mbpsim::mbp2 {

uint32_t MacFifo::put(std::vector<uint8_t>&& frame) {
  const uint32_t a = next_++;
  frames_[a] = std::move(frame);
  return a;
}

bool MacFifo::take(uint32_t addr, std::vector<uint8_t>* frame) {
  auto it = frames_.find(addr);
  if (it == frames_.end()) return false;
  *frame = std::move(it->second);
  frames_.erase(it);
  return true;
}

bool MacFifo::read(uint64_t addr, uint32_t, uint8_t* out, uint32_t n) {
  auto it = frames_.find(static_cast<uint32_t>(addr));
  if (it == frames_.end() || it->second.size() != n) return false;
  std::copy(it->second.begin(), it->second.end(), out);
  frames_.erase(it);
  return true;
}

bool MacFifo::write(uint64_t addr, uint32_t, const uint8_t* in, uint32_t n) {
  if (addr > 0xffffffffu || frames_.count(static_cast<uint32_t>(addr))) return false;
  frames_[static_cast<uint32_t>(addr)].assign(in, in + n);
  return true;
}

}  // namespace mbpsim::mbp2
