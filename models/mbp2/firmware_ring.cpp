#include "models/mbp2/firmware_ring.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"

namespace mbpsim::mbp2 {

FirmwareRing::FirmwareRing(Calendar& cal, DmaEngine& engine) : cal_(cal), e_(engine), collected_(engine.posted()) {
  e_.set_interrupt([this] { collect(); });
}

uint32_t FirmwareRing::post(uint64_t at, uint64_t src, uint64_t dst, uint32_t bytes, DmaEngine::Xfer xfer, DmaEngine::Done done, uint32_t ctx,
                            uint32_t read_bytes, DmaEngine::Move move, std::vector<uint8_t> src_bytes) {
  const uint32_t n = e_.post(at, src, dst, bytes, std::move(xfer), ctx, read_bytes, move, std::move(src_bytes));
  expect(n, std::move(done));
  return n;
}

void FirmwareRing::expect(uint32_t number, DmaEngine::Done done) {
  if (!done) return;
  if (finished(number) || (!table_.empty() && static_cast<int32_t>(number - table_.back().first) <= 0))
    internal_error(std::string(e_.name()) + ": a routine noted for a descriptor out of order or already collected");
  table_.emplace_back(number, std::move(done));
}

void FirmwareRing::collect() {
  const uint64_t epoch = epoch_;
  while (collected_ != e_.handed()) {
    const uint32_t n = collected_++;
    // The entry as the ring holds it: handed back, or lost (not done, or another number).
    const DmaEngine::Desc d = e_.desc(n % e_.ring());
    DmaEngine::Done fn;
    while (!table_.empty() && static_cast<int32_t>(table_.front().first - n) <= 0) {
      if (table_.front().first == n) fn = std::move(table_.front().second);
      table_.pop_front();
    }
    if (fn && d.done() && d.number() == (n & 0xffffff)) {
      fn(d);
      if (epoch != epoch_) return;  // the routine reset the ring (a power loss)
    }
    if (!waiters_.empty()) {
      std::vector<std::function<void()>> ready;
      for (size_t i = 0; i < waiters_.size();)
        if (finished(waiters_[i].first)) {
          ready.push_back(std::move(waiters_[i].second));
          waiters_.erase(waiters_.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
          ++i;
        }
      for (auto& w : ready) {
        w();
        if (epoch != epoch_) return;
      }
    }
  }
}

void FirmwareRing::when_done(uint32_t number, std::function<void()> fn) {
  if (finished(number)) return fn();
  waiters_.emplace_back(number, std::move(fn));
}

void FirmwareRing::reset() {
  ++epoch_;
  e_.reset();
  collected_ = e_.handed();
  table_.clear();
  // Whoever waited for a descriptor from before hears it will not complete.
  for (auto& w : waiters_) cal_.after(0, std::move(w.second));
  waiters_.clear();
}

}  // namespace mbpsim::mbp2
