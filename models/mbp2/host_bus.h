// BIU: the host I/O bus as the card sees it, shared burst by burst by its DMA engines and the
// host's programmed writes (8.2).
#pragma once
#include "models/host/io_bus.h"
#include "models/mbp2/unit.h"

namespace mbpsim::mbp2 {

// The host I/O bus the card sits on is the host's (models/host/io_bus.h).
using host::BusConfig;

// The bus is one shared resource, granted burst by burst in round robin among the DMA
// transfers that want it (the PGE's and the ADMA's), modelled as a `FairShare`: a transfer
// books its time when its engine takes it, and one booked later shares the bus from its start
// on, delaying those in progress. A programmed write by the host wins the next arbitration, so
// it waits at most for the burst in progress and delays the DMA by its own length.
class HostBus : public Unit {
 public:
  HostBus(const BusConfig& c, Stats& st, const std::string& name);
  // Bus cycles to move [addr, addr + bytes) by DMA. SBus bursts are naturally aligned powers of
  // two up to the maximum burst, so an unaligned transfer is split into more, shorter bursts;
  // PCI bursts take any start and length (byte enables) up to the maximum burst.
  double transfer_cycles(uint64_t addr, uint32_t bytes) const;
  uint64_t cycles_ps(double cycles) const;
  // Books a DMA transfer that may start at `at`: one span, or several the engine moves one
  // after another in one tenure of its own (a structure's header, then its data).
  struct Span {
    uint64_t addr;
    uint32_t bytes;
  };
  // The spans of one transfer: one or two held here (nothing allocated), or a caller's vector
  // borrowed for the call.
  class Spans {
   public:
    Spans(Span a) : own_{a, Span{}}, n_(1) {}                      // NOLINT(google-explicit-constructor)
    Spans(Span a, Span b) : own_{a, b}, n_(2) {}
    Spans(const std::vector<Span>& v) : v_(&v), n_(v.size()) {}  // NOLINT(google-explicit-constructor)
    const Span* begin() const { return v_ ? v_->data() : own_.data(); }
    const Span* end() const { return begin() + n_; }

   private:
    std::array<Span, 2> own_{};
    const std::vector<Span>* v_ = nullptr;
    size_t n_;
  };
  FairShare::Booking dma(uint64_t at, uint64_t addr, uint32_t bytes) { return dma(at, {Span{addr, bytes}}); }
  FairShare::Booking dma(uint64_t at, const Spans& spans);
  uint64_t dma_ps(const Spans& spans) const;  // their time alone
  // A programmed write by the host (a doorbell): returns when it completes.
  uint64_t pio(uint64_t at);
  // The NIC lost its power: its DMA transfers on the bus stop (the host's writes do not).
  void power_off();
  const BusConfig& config() const { return c_; }
  uint64_t busy_ps() const { return busy_ps_.value; }

 private:
  void count_wait();
  BusConfig c_;
  uint64_t grant_ps_;  // one maximum burst with its overhead
  FairShare time_;
  uint64_t waited_ = 0;  // the DMA wait already counted
  Counter &bytes_, &busy_ps_, &wait_ps_, &pios_;
};

}  // namespace mbpsim::mbp2
