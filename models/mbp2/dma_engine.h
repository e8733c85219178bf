// A DMA engine with a descriptor ring in EM: the PGE, the ADMA, the LDMAs and the CAU's (8.3.4).
#pragma once
#include "models/mbp2/dma_port.h"
#include "models/mbp2/em.h"

namespace mbpsim::mbp2 {

// A DMA engine with a descriptor ring in EM (8.3.4): posting writes a 20-byte descriptor into
// the next slot, big-endian: +0 source address, +4 destination address, +8 length, +12 status
// (bit 31: owned by the engine, bit 30: done, bit 29: error, bit 28: the engine moves the bytes
// through its ports, bit 27: from its second port to its first, bits 0-23: the descriptor's
// number), +16 context (the TLB context of a host-side address; kNoContext for none). The
// engine serves descriptors one at a time in order. When one completes it reads the descriptor
// back from EM, moves the length it names from the source to the destination through its
// ports when the move bit is set (otherwise the owner moves the bytes; see `post`), clears the
// owner bit and sets done, and raises its ring's interrupt. It knows nothing of what a
// descriptor is for: the firmware learns of the completion from the ring in EM
// (`FirmwareRing`). A descriptor that is no longer the one posted (something overwrote its
// status) is not handed back (its status stays as found) and is counted in `lost`; the
// interrupt is raised all the same. At most `ring` are outstanding: a
// descriptor for a slot whose previous one is still owned by the engine waits until it
// completes. The transfer's time is booked when the engine takes it, for the length posted.
// Addresses are host physical for the host side and EM offsets for the card side (a frame
// buffer of a FramePool, the data inside one). `reset` (a power loss) forgets every descriptor
// in flight: they move nothing and complete nothing.
class DmaEngine : public Unit {
 public:
  static constexpr uint32_t kDescBytes = 20;
  static constexpr uint32_t kOwn = 1u << 31, kDone = 1u << 30, kError = 1u << 29, kMove = 1u << 28, kBack = 1u << 27;
  // Who moves the bytes: the owner (the engine takes the time), or the engine from its first
  // port (`connect`'s source) to its second, or back from the second to the first (the ADMA,
  // whose ports are EM and host memory, reading host memory into EM).
  enum class Move : uint8_t { Owner, Forward, Back };
  static constexpr uint32_t kNoContext = ~0u;
  struct Desc {
    uint32_t src = 0, dst = 0, bytes = 0, status = 0, ctx = kNoContext;
    uint32_t slot = 0;  // where in the ring it is (not a word of it)
    uint32_t number() const { return status & 0xffffff; }
    bool done() const { return (status & kDone) != 0; }
    bool error() const { return (status & kError) != 0; }
    bool move() const { return (status & kMove) != 0; }
    bool back() const { return (status & kBack) != 0; }
  };
  using Done = std::function<void(const Desc&)>;
  DmaEngine(Calendar& cal, Em& em, uint32_t ring, double setup_ns, Stats& st, const std::string& name,
            const char* module = nullptr);
  // The ports the engine moves bytes between (source, destination).
  void connect(DmaPort* src, DmaPort* dst) {
    src_ = src;
    dst_ = dst;
  }
  // A descriptor posted at `at` whose transfer, once started at time s, ends at xfer(s).
  // The engine calls xfer when it takes the descriptor (its previous one done, this one
  // written), for a start after its setup, not when the descriptor is posted: the memories and
  // the bus are booked in the order the engines really reach them, a setup ahead at most, so a
  // deep queue books nothing ahead.
  // `read_bytes`, when the engine reads more than it writes (the PGE reads a structure's header
  // too), is what `bytes` counts. Returns the descriptor's number (all 32 bits; its status
  // holds the low 24). `move`: the engine moves the bytes through its
  // ports (the LDMA, the PGE fetching, the ADMA writing host memory and reading it for a
  // reply); otherwise their owner moves them (the ADMA's reads for an atomic's old values are
  // the command semantics', the PGE delivering into a receive structure writes its slot and
  // head, the CAU transforms in place at completion: `Cau`) and the engine takes the time.
  // xfer returns when the transfer ends: its bookings of the shared memory and bus, whose
  // ends later bookings may still delay; the engine completes when the last of them is over.
  using Xfer = std::function<Finish(uint64_t start)>;
  uint32_t post(uint64_t at, uint32_t bytes, Xfer xfer) { return post(at, 0, 0, bytes, std::move(xfer)); }
  // `src_bytes`: what the producer writes into EM at `src` together with the descriptor (when
  // its slot is free): the bytes a move takes from EM.
  uint32_t post(uint64_t at, uint64_t src, uint64_t dst, uint32_t bytes, Xfer xfer, uint32_t ctx = kNoContext, uint32_t read_bytes = ~0u,
                Move move = Move::Owner, std::vector<uint8_t> src_bytes = {});
  // The ring's interrupt line: raised once per descriptor the engine is through with (handed
  // back done, or lost), in ring order, with its slot not yet reused.
  void set_interrupt(std::function<void()> irq) { irq_ = std::move(irq); }
  // What the unit itself does at a completion, after the move and the done status and before
  // the interrupt (the CAU transforms the frame in place then).
  void set_completion(std::function<void(const Desc&)> fn) { at_completion_ = std::move(fn); }
  // Descriptors the engine is through with (numbers below this one).
  uint32_t handed() const { return handed_; }
  uint32_t posted() const { return posted_; }
  void reset();
  Desc desc(uint32_t slot) const;  // the descriptor in a slot, as it is in EM
  uint32_t next_slot() const { return posted_ % ring_; }  // the slot the next post takes
  uint32_t next_number() const { return posted_ & 0xffffff; }  // the number its status gets
  uint64_t busy_ps() const { return busy_.value; }
  uint32_t ring_offset() const { return ring_off_; }  // where the ring lies in EM
  uint32_t ring() const { return ring_; }

 private:
  void write_desc(uint32_t slot, uint64_t src, uint64_t dst, uint32_t bytes, uint32_t status, uint32_t ctx,
                  const std::vector<uint8_t>& src_bytes);
  struct Entry {
    uint32_t number;
    uint64_t at;  // when its producer writes it (once its slot is free)
    Desc posted;  // as the producer writes it into the ring (the engine works from the ring)
    std::vector<uint8_t> src_bytes;
    Xfer xfer;
    bool written = false;
    uint64_t start = 0;  // its transfer's start, once taken
    Finish finish;       // and end
  };
  void schedule_write(Entry& e);
  void written(Entry& e);
  void try_start();
  void begin(uint64_t start);
  void arm();  // completes the front when its transfer is over
  void complete();
  // The descriptor in `slot` goes back to the firmware with `status`; then the next.
  void hand_back(uint32_t slot, uint32_t status);
  void finish_entry();
  Calendar& cal_;
  Em& em_;
  uint32_t ring_;
  uint32_t ring_off_;
  uint64_t setup_ps_;
  uint32_t posted_ = 0;
  uint32_t handed_ = 0;
  uint64_t epoch_ = 0;  // reset() makes the descriptors in flight stale
  std::deque<Entry> q_;  // posted and not complete, oldest first; the engine serves the front
  bool running_ = false;  // the front is being transferred (or set up), or handed back late
  std::function<void()> irq_;
  std::function<void(const Desc&)> at_completion_;
  DmaPort* src_ = nullptr;
  DmaPort* dst_ = nullptr;
  std::vector<uint8_t> staging_;
  Counter &descs_, &bytes_, &busy_, &ring_full_, &lost_, &errors_;
};

}  // namespace mbpsim::mbp2
