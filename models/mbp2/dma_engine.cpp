#include "models/mbp2/dma_engine.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"
#include "models/core/mutant.h"
#include "models/core/timeline.h"

namespace mbpsim::mbp2 {

DmaEngine::DmaEngine(Calendar& cal, Em& em, uint32_t ring, double setup_ns, Stats& st, const std::string& n, const char* module)
    : Unit(n, module),
      cal_(cal),
      em_(em),
      ring_(ring),
      ring_off_(0),
      setup_ps_(static_cast<uint64_t>(std::llround(setup_ns * 1000))),
      descs_(st.counter(n + ".descriptors", "descriptors served")),
      bytes_(st.counter(n + ".bytes", "bytes moved")),
      busy_(st.counter(n + ".busy_ps", "time the engine was transferring")),
      ring_full_(st.counter(n + ".ring_full", "descriptors posted to a full ring (waited for the oldest)")),
      lost_(st.counter(n + ".lost", "descriptors overwritten before they completed (not handed to their owner)")),
      errors_(st.counter(n + ".errors", "descriptors naming an address a port does not have (nothing moved)")) {
  if (ring_ == 0) internal_error("a descriptor ring needs at least one entry");
  ring_off_ = em_.carve(ring_ * kDescBytes);
}

void DmaEngine::write_desc(uint32_t slot, uint64_t src, uint64_t dst, uint32_t bytes, uint32_t status, uint32_t ctx,
                           const std::vector<uint8_t>& src_bytes) {
  if (!src_bytes.empty()) em_.write(static_cast<uint32_t>(src), src_bytes.data(), static_cast<uint32_t>(src_bytes.size()));
  const uint32_t d = ring_off_ + slot * kDescBytes;
  em_.store32(d, static_cast<uint32_t>(src));
  em_.store32(d + 4, static_cast<uint32_t>(dst));
  em_.store32(d + 8, bytes);
  em_.store32(d + 12, status);
  em_.store32(d + 16, ctx);
}

DmaEngine::Desc DmaEngine::desc(uint32_t slot) const {
  const uint32_t d = ring_off_ + (slot % ring_) * kDescBytes;
  return Desc{em_.load32(d), em_.load32(d + 4), em_.load32(d + 8), em_.load32(d + 12), em_.load32(d + 16), slot % ring_};
}

uint32_t DmaEngine::post(uint64_t at, uint64_t src, uint64_t dst, uint32_t bytes, Xfer xfer, uint32_t ctx, uint32_t read_bytes, Move move,
                         std::vector<uint8_t> src_bytes) {
  const uint32_t number = posted_++;
  const uint32_t slot = number % ring_;
  const uint32_t status = kOwn | (move != Move::Owner ? kMove : 0) | (move == Move::Back ? kBack : 0) | (number & 0xffffff);
  // The slot is free once every descriptor a ring's length before this one is done.
  const bool room = q_.size() < ring_;
  if (!room) ring_full_.inc();
  descs_.inc();
  bytes_.inc(read_bytes == ~0u ? bytes : read_bytes);
  q_.push_back(Entry{number, at, Desc{static_cast<uint32_t>(src), static_cast<uint32_t>(dst), bytes, status, ctx, slot}, std::move(src_bytes),
                     std::move(xfer)});
  if (room) schedule_write(q_.back());
  return number;
}

// The producer writes the descriptor (and its bytes) at its time, or when its slot frees.
void DmaEngine::schedule_write(Entry& e) {
  if (e.at <= cal_.now_ps()) return written(e);
  cal_.at(e.at, [this, number = e.number, epoch = epoch_] {
    // (not written, so not started: still in the queue, whose numbers run on from the front's)
    if (epoch == epoch_) written(q_[number - q_.front().number]);
  });
}

void DmaEngine::written(Entry& e) {
  write_desc(e.posted.slot, e.posted.src, e.posted.dst, e.posted.bytes, e.posted.status, e.posted.ctx, e.src_bytes);
  e.written = true;
  std::vector<uint8_t>().swap(e.src_bytes);
  try_start();
}

// One engine serves its descriptors in order: the front, once written, after the setup. It
// books the transfer then, for when the setup is over (a setup ahead, no more).
void DmaEngine::try_start() {
  if (running_ || q_.empty() || !q_.front().written) return;
  running_ = true;
  begin(cal_.now_ps() + setup_ps_);
}

void DmaEngine::begin(uint64_t s) {
  Entry& e = q_.front();
  e.start = s;
  e.finish = e.xfer(s);
  Xfer().swap(e.xfer);  // (what it captured is not needed any more)
  arm();
}

// The transfer is over when the last of its bookings is; a booking made since may have delayed
// it, so the engine looks again when the end it was told comes.
void DmaEngine::arm() {
  const Entry& e = q_.front();
  cal_.at(std::max(e.start, e.finish.end()), [this, epoch = epoch_] {
    if (epoch != epoch_) return;
    if (q_.front().finish.end() > cal_.now_ps()) return arm();
    complete();
  });
}

void DmaEngine::complete() {
  if (q_.empty() || !running_) internal_error(std::string(name()) + ": a descriptor completed that was not started");
  Entry f = std::move(q_.front());
  q_.pop_front();
  running_ = false;
  busy_.inc(cal_.now_ps() - f.start);
  const uint32_t slot = f.posted.slot;
  // The engine works from the descriptor as it is in EM.
  Desc d = desc(slot);
  if (Timeline* tl = timeline())  // the transfer, from its start to its last booking's end
    tl->slice(tl->track(name()), "transfer " + std::to_string(d.bytes) + " B", f.start, cal_.now_ps(),
              "{\"slot\":" + std::to_string(slot) + ",\"bytes\":" + std::to_string(d.bytes) + "}");
  if (mutant::on(mutant::Id::DmaMovesPosted)) d = Desc{f.posted.src, f.posted.dst, f.posted.bytes, d.status, f.posted.ctx, slot};
  const bool lost = !(d.status & kOwn) || d.number() != (f.number & 0xffffff);
  if (lost) {
    lost_.inc();
  } else {
    uint32_t status = kDone | (d.status & (kMove | kBack)) | d.number();
    uint64_t later = 0;
    if (src_ && dst_ && d.move() && d.bytes) {
      staging_.resize(d.bytes);
      DmaPort* from = d.back() ? dst_ : src_;
      DmaPort* to = d.back() ? src_ : dst_;
      if (!from->read(d.src, d.ctx, staging_.data(), d.bytes) || !to->write(d.dst, d.ctx, staging_.data(), d.bytes)) {
        status |= kError;
        errors_.inc();
      }
      later = from->take_delay_ps() + to->take_delay_ps();
    }
    if (later) {
      // A port's far side took longer (a TLM-2.0 memory's annotated delay): the descriptor is
      // handed back, and the next started, that much later.
      running_ = true;
      cal_.after(later, [this, epoch = epoch_, slot, status] {
        if (epoch != epoch_) return;
        running_ = false;
        hand_back(slot, status);
      });
      return;
    }
    hand_back(slot, status);
    return;
  }
  finish_entry();
}

void DmaEngine::hand_back(uint32_t slot, uint32_t status) {
  // It hands the descriptor back in the ring.
  em_.store32(ring_off_ + slot * kDescBytes + 12, status);
  if (at_completion_) at_completion_(desc(slot));
  finish_entry();
}

void DmaEngine::finish_entry() {
  // Its ring's interrupt: the firmware collects the entry (its slot still holds it).
  ++handed_;
  const uint64_t epoch = epoch_;
  if (irq_) irq_();
  if (epoch != epoch_) return;  // the firmware's routine reset the engine (a power loss)
  // The slot is free: a descriptor that waited for it is written.
  if (q_.size() >= ring_ && !q_[ring_ - 1].written) schedule_write(q_[ring_ - 1]);
  try_start();
}

void DmaEngine::reset() {
  ++epoch_;
  // The engine stops: the next descriptor waits for no transfer from before.
  q_.clear();
  running_ = false;
  handed_ = posted_;  // it is through with them all
}

}  // namespace mbpsim::mbp2
