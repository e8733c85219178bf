// Fixed-size frame buffers carved in EM (8.3.3-8.3.4).
#pragma once
#include "models/mbp2/em.h"

namespace mbpsim::mbp2 {

// Fixed-size frame buffers carved in EM (8.3.3-8.3.4): a frame is bytes in one of them between
// the units that handle it. The MAC transmits what the LDMA reads from a transmit buffer; the
// LDMA writes a received frame into a receive buffer, where the CAU opens it in place and the
// PME's routines read it. A buffer is owned by one frame from `alloc` to `release`. A power
// loss empties EM: `reset` frees every buffer, and releases of buffers taken before it (by
// work still in flight) are ignored.
class FramePool : public Unit {
 public:
  static constexpr uint32_t kBufBytes = 1536;  // 1514-byte frame, in whole 32-byte bursts
  struct Buf {
    int32_t idx = -1;
    uint64_t serial = 0;  // which allocation (a buffer's later owners have later ones)
    uint32_t len = 0;     // bytes of the frame in it
    bool valid() const { return idx >= 0; }
  };
  FramePool(Em& em, uint32_t count, Stats& st, const std::string& name);
  // A free buffer (lowest index first), or false (counted in `exhausted`) when none is.
  bool alloc(Buf* b);
  void release(const Buf& b);
  // Writes a frame into the buffer (its length becomes the frame's), and reads it back.
  void put(Buf& b, const std::vector<uint8_t>& frame);
  std::vector<uint8_t> get(const Buf& b) const;
  uint32_t offset(const Buf& b) const { return base_ + static_cast<uint32_t>(b.idx) * kBufBytes; }
  bool live(const Buf& b) const { return b.valid() && owner_[b.idx] == b.serial; }
  void reset();
  uint32_t count() const { return static_cast<uint32_t>(owner_.size()); }
  uint32_t in_use() const { return in_use_; }

 private:
  Em& em_;
  uint32_t base_;
  std::vector<uint64_t> owner_;  // the serial of the allocation holding each buffer, 0: free
  uint32_t in_use_ = 0;
  uint64_t serial_ = 0, reset_at_ = 0;
  Counter &allocs_, &exhausted_, &high_;
};

}  // namespace mbpsim::mbp2
