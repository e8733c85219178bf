// The conventional NICs of MBCF/Ether (conventional_nic.h): descriptor fetch and bus DMA on
// transmit, DMA and descriptor write-back on receive, the LANCE's streaming transmit.
#include "models/mbcf/conventional_nic.h"

#include <algorithm>
#include <cmath>

#include "models/mbcf/ether_system.h"

namespace mbpsim::mbcf {

ConventionalNic::ConventionalNic(sc_core::sc_module_name name, Calendar& cal, const EtherSysConfig& c, net::EtherSegment& wire,
                                 uint32_t station, std::function<void()> tx_interrupt)
    : sc_core::sc_module(name), cal_(cal), c_(c), wire_(wire), station_(station), tx_interrupt_(std::move(tx_interrupt)) {}

uint64_t ConventionalNic::dma_ps(uint32_t bytes) const {
  const double burst = c_.bus.max_burst, width = c_.bus.width_bytes;
  const double bursts = std::ceil(bytes / burst);
  const double cyc = bursts * (burst / width + c_.bus.overhead_cycles);
  return static_cast<uint64_t>(std::llround(cyc * 1e6 / c_.bus.clock_mhz));
}

void ConventionalNic::transmit(uint32_t dst, Frame&& frame, Sent sent) {
  if (c_.nic_tx_streams) {
    tx_stream_.emplace_back(std::make_pair(dst, std::move(frame)), std::move(sent));
    if (!tx_streaming_) stream_next();
    return;
  }
  const uint64_t end = tx_ready_ps(static_cast<uint32_t>(frame.size()));
  cal_.at(end, [this, epoch = epoch_, dst, f = std::move(frame), k = std::move(sent)]() mutable {
    if (epoch_ != epoch) return;  // the power went: the NIC forgot it
    to_wire(dst, std::move(f), std::move(k));
  });
}

void ConventionalNic::to_wire(uint32_t dst, Frame&& frame, Sent sent) {
  wire_.send(station_, dst, std::move(frame), [this, epoch = epoch_, k = std::move(sent)](bool) {
    if (epoch_ != epoch) return;
    if (c_.nic_tx_streams) stream_next();
    tx_interrupt_();
    k(true);
  });
}

// Its turnaround over, the frame goes into the MAC, the DMA keeping pace with the wire; the
// next waits until this one has left (the MAC's completion).
void ConventionalNic::stream_next() {
  tx_streaming_ = !tx_stream_.empty();
  if (!tx_streaming_) return;
  auto next = std::move(tx_stream_.front());
  tx_stream_.pop_front();
  cal_.after(static_cast<uint64_t>(c_.nic_tx_latency_ns * 1000), [this, epoch = epoch_, f = std::move(next)]() mutable {
    if (epoch_ != epoch) return;  // the power went: the NIC forgot it
    to_wire(f.first.first, std::move(f.first.second), std::move(f.second));
  });
}

uint64_t ConventionalNic::tx_ready_ps(uint32_t bytes) {
  // One DMA engine fetches a frame's descriptor, then its data: a frame kicked while the one
  // before is still in the engine waits for it, then for its own fetch. A NIC that prefetches
  // descriptors fetches the next one during the DMA of the one before.
  const uint64_t lat = static_cast<uint64_t>(c_.nic_tx_latency_ns * 1000);
  const uint64_t t0 = c_.nic_tx_prefetch ? std::max(cal_.now_ps() + lat, tx_free_) : std::max(cal_.now_ps(), tx_free_) + lat;
  const uint64_t start = std::max(t0, bus_free_);
  const uint64_t end = start + dma_ps(std::max<uint32_t>(bytes, 60));
  bus_free_ = end;
  tx_free_ = end;
  return end;
}

void ConventionalNic::receive(Frame&& frame, RxReady ready) {
  const uint64_t t = rx_ready_ps(static_cast<uint32_t>(frame.size()));
  cal_.at(t, [k = std::move(ready), f = std::move(frame)]() mutable {
    Rx r{std::move(f), 0};
    k(&r);
  });
}

uint64_t ConventionalNic::rx_ready_ps(uint32_t len) {
  const uint64_t now = cal_.now_ps();
  uint64_t end;
  if (c_.nic_rx_cut_through) {  // DMA overlaps reception; it ends no earlier than the frame
    const uint64_t wire = wire_.slot_ps(len) - net::EtherSegment::kIfg * 8 * wire_.bit_ps();
    end = std::max(now, std::max(now - std::min(now, wire), bus_free_) + dma_ps(len));
  } else {
    end = std::max(now, bus_free_) + dma_ps(len);
  }
  bus_free_ = end;
  return end + static_cast<uint64_t>(c_.nic_rx_latency_ns * 1000);
}

void ConventionalNic::power_off() {
  tx_stream_.clear();
  tx_streaming_ = false;
  ++epoch_;
}

}  // namespace mbpsim::mbcf
