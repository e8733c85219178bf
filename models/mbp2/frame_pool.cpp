#include "models/mbp2/frame_pool.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"

namespace mbpsim::mbp2 {

FramePool::FramePool(Em& em, uint32_t count, Stats& st, const std::string& n)
    : Unit(n),
      em_(em),
      base_(em.carve(count * kBufBytes)),
      owner_(count, 0),
      allocs_(st.counter(n + ".allocated", "frames given a buffer in EM")),
      exhausted_(st.counter(n + ".exhausted", "frames that found every buffer taken")),
      high_(st.counter(n + ".high_water", "most buffers taken at once")) {
  if (count == 0) internal_error("a frame pool needs at least one buffer");
}

bool FramePool::alloc(Buf* b) {
  for (uint32_t i = 0; i < owner_.size(); ++i)
    if (owner_[i] == 0) {
      owner_[i] = ++serial_;
      ++in_use_;
      if (in_use_ > high_.value) high_.value = in_use_;
      allocs_.inc();
      *b = Buf{static_cast<int32_t>(i), serial_, 0};
      return true;
    }
  exhausted_.inc();
  return false;
}

void FramePool::release(const Buf& b) {
  if (!live(b)) {
    if (b.valid() && b.serial > reset_at_) internal_error("a frame buffer in EM released twice");
    return;  // taken before a power loss emptied EM
  }
  owner_[b.idx] = 0;
  --in_use_;
}

void FramePool::put(Buf& b, const std::vector<uint8_t>& f) {
  if (!live(b)) internal_error("a frame written into an EM buffer it does not own");
  if (f.size() > kBufBytes) internal_error("a frame of " + std::to_string(f.size()) + " bytes for an EM buffer of " + std::to_string(kBufBytes));
  em_.write(offset(b), f.data(), static_cast<uint32_t>(f.size()));
  b.len = static_cast<uint32_t>(f.size());
}

std::vector<uint8_t> FramePool::get(const Buf& b) const {
  if (!live(b)) internal_error("a frame read from an EM buffer it does not own");
  return em_.read(offset(b), b.len);
}

void FramePool::reset() {
  owner_.assign(owner_.size(), 0);
  in_use_ = 0;
  reset_at_ = serial_;
}

}  // namespace mbpsim::mbp2
