// The conventional NICs of MBCF/Ether's hosts (chapter 6), behind the `Nic` seam: a NIC on the
// host I/O bus with a descriptor ring, whose DMA moves a frame between the stack's buffer in
// host memory and the MAC at the bus's burst rate. Three kinds, by their parameters (`nic.*`,
// ether_params.cpp):
//   - the descriptor-DMA NIC: each frame's descriptor is fetched (nic.tx_latency_ns), then its
//     data is read over the bus, store and forward, one frame at a time;
//   - with nic.tx_prefetch (the gigabit NICs), the next descriptor's fetch overlaps the DMA of
//     the frame before;
//   - with nic.tx_streams (the LANCE, whose transmit FIFO is smaller than a frame), the NIC
//     streams a frame from memory as it leaves, so it takes the next only once the one before
//     has left the MAC, nic.tx_latency_ns later (descriptor, status and FIFO prefill).
// Receive: the DMA writes the frame into the stack's ring buffer after it has arrived (or, with
// nic.rx_cut_through, while it arrives), then the descriptor write-back and interrupt dispatch
// take nic.rx_latency_ns. A frame that has left the MAC raises the transmit-completion
// interrupt. The NIC reads its parameters from the node's EtherSysConfig (declared once, in
// ether_params.cpp).
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <utility>

#include <systemc>

#include "models/core/calendar.h"
#include "models/mbcf/nic.h"
#include "models/net/ether.h"

namespace mbpsim::mbcf {

struct EtherSysConfig;

class ConventionalNic final : public sc_core::sc_module, public Nic {
 public:
  // `station`: the node's port on `wire`. `tx_interrupt`: the NIC raises its transmit-completion
  // interrupt (the host's driver decides what its routine costs).
  ConventionalNic(sc_core::sc_module_name name, Calendar& cal, const EtherSysConfig& c, net::EtherSegment& wire, uint32_t station,
                  std::function<void()> tx_interrupt);
  void transmit(uint32_t dst, Frame&& frame, Sent sent) override;
  void receive(Frame&& frame, RxReady ready) override;
  void power_off() override;
  // Time the bus's DMA takes for `bytes` (bursts of bus.max_burst, each with its overhead).
  uint64_t dma_ps(uint32_t bytes) const;

 private:
  // A frame of `bytes` handed over now: when it is in the MAC (descriptor fetch, then DMA).
  uint64_t tx_ready_ps(uint32_t bytes);
  // A frame of `len` bytes arrived at the MAC now: when the stack may look at it.
  uint64_t rx_ready_ps(uint32_t len);
  // The frame is in the MAC: onto the wire; then the completion interrupt and `sent`.
  void to_wire(uint32_t dst, Frame&& frame, Sent sent);
  // A streaming NIC takes its next frame (the one before has left the MAC, or it was idle).
  void stream_next();

  Calendar& cal_;
  const EtherSysConfig& c_;
  net::EtherSegment& wire_;
  const uint32_t station_;
  std::function<void()> tx_interrupt_;
  uint64_t bus_free_ = 0, tx_free_ = 0;  // when the bus, and the transmit DMA, are next free
  // A streaming NIC: frames waiting for it, and whether one is in the MAC.
  std::deque<std::pair<std::pair<uint32_t, Frame>, Sent>> tx_stream_;
  bool tx_streaming_ = false;
  uint64_t epoch_ = 0;  // bumped at power_off: work scheduled before it finds it changed
};

}  // namespace mbpsim::mbcf
