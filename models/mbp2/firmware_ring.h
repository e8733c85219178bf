// The PME firmware's table of what each posted descriptor is for, collected at the ring's
// interrupt (8.3.4).
#pragma once
#include "models/mbp2/dma_engine.h"

namespace mbpsim::mbp2 {

// The PME firmware's side of a descriptor ring (8.3.4: "on completion of DMA processing, the
// PME must collect the used entry of the descriptor"): a table of what each descriptor it
// posted is for (the routine to continue with), kept in order of the descriptors' numbers, and
// its collection pointer. The engine's ring interrupt runs the collection: from the pointer
// on, each entry the engine is through with is read from the ring in EM; one handed back (done
// set, its number the one expected) continues the routine the table names for it, with the
// descriptor as read; one lost continues nothing. Continuations run in ring order. A routine
// may also wait for a descriptor (`when_done`: the receive routine for its ADMA writes). Not
// a hardware unit: state of the firmware, lost with EM on a power loss (`reset`).
class FirmwareRing {
 public:
  FirmwareRing(Calendar& cal, DmaEngine& engine);
  DmaEngine& engine() { return e_; }
  // Posts a descriptor (DmaEngine::post) and notes `done` for it in the table.
  uint32_t post(uint64_t at, uint64_t src, uint64_t dst, uint32_t bytes, DmaEngine::Xfer xfer, DmaEngine::Done done = {},
                uint32_t ctx = DmaEngine::kNoContext, uint32_t read_bytes = ~0u, DmaEngine::Move move = DmaEngine::Move::Owner,
                std::vector<uint8_t> src_bytes = {});
  // Notes `done` for descriptor `number`, just posted through a unit's own interface (the
  // CAU's). Numbers must be noted in the order they were posted.
  void expect(uint32_t number, DmaEngine::Done done);
  // Runs `fn` once descriptor `number` has been collected (at once if it has, or if a reset lost
  // it; after a reset, from the calendar).
  void when_done(uint32_t number, std::function<void()> fn);
  bool finished(uint32_t number) const { return static_cast<int32_t>(collected_ - number) > 0; }
  // A power loss: the engine forgets what it had in flight, the table is lost with EM.
  void reset();

 private:
  void collect();  // the ring's interrupt
  Calendar& cal_;
  DmaEngine& e_;
  uint32_t collected_;  // the number of the next entry to collect
  uint64_t epoch_ = 0;
  std::deque<std::pair<uint32_t, DmaEngine::Done>> table_;
  std::vector<std::pair<uint32_t, std::function<void()>>> waiters_;
};

}  // namespace mbpsim::mbp2
