// BIU: the host I/O bus as the card sees it, shared burst by burst by its DMA engines and the
// host's programmed writes (8.2).
#pragma once
#include <deque>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include "models/host/io_bus.h"
#include "models/mem/memory.h"
#include "models/mbp2/dma_port.h"
#include "models/mbp2/unit.h"

namespace mbpsim::mbp2 {

// The host I/O bus the card sits on is the host's (models/host/io_bus.h).
using host::BusConfig;

// The card's registers behind the BIU's PIO socket (the ULI's doorbells).
class PioTarget {
 public:
  virtual ~PioTarget() = default;
  struct Answer {
    enum Kind { Done, Busy, AddressError, Error } kind;
    uint64_t done_ps = 0;  // Done: when the bus completes the store (the register latches it then)
  };
  // A programmed write of the 32-bit `value` (big-endian on the bus) at `offset` in the card's
  // register window, arriving at `at` (ps); `again`: a store it answered Busy before. Busy: the
  // register cannot take it yet; the BIU retries the store, holding its initiator, and offers
  // it again when the card calls HostBus::pio_ready. AddressError: no register there; Error:
  // the card cannot answer (no power).
  virtual Answer pio_write(uint64_t offset, uint32_t value, uint64_t at, bool again) = 0;
};

// The bus is one shared resource, granted burst by burst in round robin among the DMA
// transfers that want it (the PGE's and the ADMA's), modelled as a `FairShare`: a transfer
// books its time when its engine takes it, and one booked later shares the bus from its start
// on, delaying those in progress. A programmed write by the host wins the next arbitration, so
// it waits at most for the burst in progress and delays the DMA by its own length.
//
// It is also the card's DMA master into host memory: a TLM-2.0 initiator socket (generic
// payload, b_transport) bound, when elaboration ends, to the host's memory
// (EtherSystem::host_memory: the host's own, or a user's TLM-2.0 memory). As a DmaPort it is
// the ADMA's host side: host physical addresses, a refused address (an error response) marks
// the descriptor with kError. The bus time above is the transfer's time; a delay the memory
// annotates is added on top (DmaPort::take_delay_ps).
//
// And it is the target of the host's programmed writes into the card's registers: `pio_socket`,
// a TLM-2.0 target of the base protocol (generic payload, no extension) that any number of
// initiators may bind (the host CPU's `pio` socket is bound by the card; a user's model may bind
// too). A write of 4 bytes at an offset in the card's window, big-endian, no byte enables; a
// read, another length or byte enables get the base protocol's error responses. Either
// interface: nb_transport_fw (BEGIN_REQ; TLM_COMPLETED with the store's time annotated, or, when
// the register is busy, TLM_ACCEPTED and a BEGIN_RESP on the backward path once it has taken it:
// the bus retries the store and its master waits, as an SBus slave's rerun does), or b_transport
// from a thread (it waits inside the call while the register is busy). What the store means is
// the card's (PioTarget).
class HostBus : public Unit, public DmaPort {
 public:
  tlm_utils::simple_initiator_socket<HostBus> dma_socket;
  tlm_utils::multi_passthrough_target_socket<HostBus> pio_socket;
  HostBus(const BusConfig& c, Stats& st, const std::string& name);  // the module: name's last part
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
  // The card's registers behind pio_socket (set by the card before the simulation starts).
  void set_registers(PioTarget& r) { regs_ = &r; }
  // A busy register may take a write again: the retried stores are offered to it again, oldest
  // first, and complete as it takes them, until it answers Busy.
  void pio_ready();
  // The NIC lost its power: its DMA transfers on the bus stop (the host's writes do not); the
  // stores it was retrying end with an error response (their masters' programs are gone).
  void power_off();
  const BusConfig& config() const { return c_; }
  uint64_t busy_ps() const { return busy_ps_.value; }
  // The memory the DMA socket is bound to when elaboration ends.
  void set_memory(std::function<mem::TargetSocket&()> m) { memory_ = std::move(m); }
  bool read(uint64_t addr, uint32_t ctx, uint8_t* out, uint32_t n) override;
  bool write(uint64_t addr, uint32_t ctx, const uint8_t* in, uint32_t n) override;
  uint64_t take_delay_ps() override;

 private:
  // The module's name is alive (on SystemC's hierarchy) while the socket is built.
  HostBus(const sc_core::sc_module_name& module, const BusConfig& c, Stats& st, const std::string& name);
  void before_end_of_elaboration() override;
  bool transport(tlm::tlm_command cmd, uint64_t addr, uint8_t* data, uint32_t n);
  // The PIO target's two interfaces, and the stores a busy register made it retry, oldest first.
  void pio_b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  tlm::tlm_sync_enum pio_nb_transport_fw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& delay);
  // Offers a well-formed store to the registers: true when it is finished (taken, with `delay`
  // set to its time from now, or refused with an error response), false when it must wait.
  bool pio_offer(tlm::tlm_generic_payload& gp, uint64_t at, sc_core::sc_time& delay, bool again);
  struct Retried {
    int id;  // the initiator's socket index (nb_transport), or -1: a b_transport waiting on `woken`
    tlm::tlm_generic_payload* gp;
    sc_core::sc_event* woken;  // (b_transport) its call's event, `delay` and `done` flag
    sc_core::sc_time* delay;
    bool* done;
  };
  std::deque<Retried> retried_;
  PioTarget* regs_ = nullptr;
  std::function<mem::TargetSocket&()> memory_;
  tlm::tlm_generic_payload gp_;
  sc_core::sc_time delay_ = sc_core::SC_ZERO_TIME;  // annotated by the memory, not yet taken
  void count_wait();
  BusConfig c_;
  uint64_t grant_ps_;  // one maximum burst with its overhead
  FairShare time_;
  uint64_t waited_ = 0;  // the DMA wait already counted
  Counter &bytes_, &busy_ps_, &wait_ps_, &pios_;
};

}  // namespace mbpsim::mbp2
