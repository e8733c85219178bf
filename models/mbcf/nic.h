// A cluster node's network interface, as the host's protocol stacks see it: the narrow seam
// between a stack (the MBCF kernel of chapter 6 today) and a NIC. A NIC takes frames to send,
// puts them on its wire port, hands received frames up, and loses what it keeps when the power
// goes; what it costs the host and the bus, and how it gets the bytes there, is its own.
// Implementations: `ConventionalNic` (conventional_nic.h: the descriptor-DMA NIC, the LANCE
// that streams a frame from memory as it leaves, the gigabit NIC with descriptor prefetch),
// and the MBP2 (models/mbp2: a NIC that also runs MBCF's firmware on its PME).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

namespace mbpsim::mbcf {

class Nic {
 public:
  using Frame = std::vector<uint8_t>;
  // A received frame waiting for the stack's receive routine: its bytes, or (a NIC that keeps
  // frames in its own memory, tag != 0) the NIC's name for where they are, read by `take`.
  struct Rx {
    Frame bytes;
    uint64_t tag = 0;
  };
  // The frame is ready for the stack (nullptr: the NIC consumed or rejected it).
  using RxReady = std::function<void(Rx*)>;
  // What became of a frame given to `transmit`: it left the MAC onto the wire (true), or the
  // NIC could not send it (false: nothing went on the wire).
  using Sent = std::function<void(bool sent)>;

  virtual ~Nic() = default;
  // A frame for station `dst`, handed over now. The NIC takes it (its own DMA, or the stack's
  // copy), may transform it (the MBP2 seals it when it encrypts), puts it on the wire and says
  // when it has left. Frames leave in the order given. Nothing is said of a frame the power
  // took (power_off): the stack's own incarnation check drops what was in flight.
  virtual void transmit(uint32_t dst, Frame&& frame, Sent sent) = 0;
  // A frame from the wire, for which the stack has a receive-ring entry: `ready` gets it once
  // the stack may look at it.
  virtual void receive(Frame&& frame, RxReady ready) = 0;
  // The stack's receive routine takes a ready frame's bytes. A NIC that holds the frame in its
  // own memory keeps it until the routine takes the next one or goes idle.
  virtual Frame take(Rx& r) { return std::move(r.bytes); }
  // The receive routine has no more frames to work on.
  virtual void rx_idle() {}
  // The node loses its power: the NIC forgets what it keeps in volatile memory and what it was
  // doing (the wire stops delivering to the node; the stack clears its own state).
  virtual void power_off() = 0;
  // The OS took a page of task `ptask` out of memory: a NIC that caches translations (an I/O
  // MMU) must drop it before the frame is reused.
  virtual void page_unmapped(uint32_t ptask, uint32_t laddr) { (void)ptask, (void)laddr; }
  // A task left the node (migration): its Ptask may name another task later, so a NIC that
  // caches translations tagged with it must drop them all.
  virtual void task_left(uint32_t ptask) { (void)ptask; }
  // The OS made a task on the node (at set-up): a NIC that gives each task its own doorbell
  // assigns it one.
  virtual void task_created(uint32_t ptask) { (void)ptask; }
  // Bytes the NIC adds to every frame (a sealed frame's header and tag): a request whose frame
  // or reply would then exceed the Ethernet MTU cannot be sent.
  virtual uint32_t frame_overhead() const { return 0; }
  // What the NIC did, for a run's summary (null: nothing to say, as the conventional NIC).
  virtual nlohmann::ordered_json summary() const { return nullptr; }
};

}  // namespace mbpsim::mbcf
