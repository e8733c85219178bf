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
//
// The bytes travel as on the machine: the driver keeps every frame in a kernel buffer in host
// memory (2 KB clusters, 4.4BSD's MCLBYTES, carved from pages the OS gives it), and the NIC is
// a DMA master on the host I/O bus, a TLM-2.0 initiator socket (`dma`, generic payload,
// b_transport) bound when elaboration ends to the host's memory (EtherSystem::host_memory: the
// host's own, or a user's TLM-2.0 memory). Transmit: the stack's copy lands in a buffer, the
// NIC's DMA reads the frame from it, and what goes on the wire is what it read. Receive: the
// NIC's DMA writes the frame into a buffer, and the stack's receive routine reads it from
// there (`take`). The bus time above is the transfer's; a delay the memory annotates is added
// on top. A memory that refuses the DMA (an error response) stops the run, naming the node and
// the address. A frame longer than a buffer (kBufBytes; Ethernet's longest is 1514 bytes) is
// not sent (`sent(false)`) or, received, dropped (`ready(nullptr)`).
//
// The driver starts the transmitter as on the machine: it posts the frame's descriptor, then
// stores the transmit-demand bit into the NIC's command and status register (the LANCE's CSR0
// TDMD) with a programmed write of the host CPU, through the CPU's `pio` socket into the NIC's
// `pio_socket`, a TLM-2.0 target of the base protocol (bound when elaboration ends; any other
// bus master may bind to it too). The NIC takes every posted descriptor when the demand
// arrives. The store is posted: the device accepts it at once (TLM_COMPLETED, no delay), its
// bus time being part of the calibrated nic.tx_latency_ns (the kick's write and the descriptor
// read) and of the system call's cost. The register file: CSR0 at offset 0, written as one
// 32-bit big-endian word, TDMD = 0x8 (other bits are accepted and change nothing: the rest of
// the LANCE's start-up is not modelled); a read (not modelled), a length other than 4, byte
// enables or another offset get the base protocol's error responses.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include "models/core/calendar.h"
#include "models/core/stats.h"
#include "models/host/cpu.h"
#include "models/mbcf/nic.h"
#include "models/mem/memory.h"
#include "models/net/ether.h"

namespace mbpsim::mbcf {

struct EtherSysConfig;
class TaskSpace;

class ConventionalNic final : public sc_core::sc_module, public Nic {
 public:
  // The NIC's DMA master into host memory.
  tlm_utils::simple_initiator_socket<ConventionalNic> dma;
  // Its command and status register, the target of programmed writes on the host I/O bus.
  tlm_utils::multi_passthrough_target_socket<ConventionalNic> pio_socket;
  static constexpr uint64_t kCsr0 = 0;
  static constexpr uint32_t kTdmd = 0x8;  // CSR0's transmit demand
  // `station`: the node's port on `wire`. `os`: the host's OS, which gives the driver the pages
  // of its buffers (frames of `memory`, the socket `dma` is bound to). `cpu`: the host CPU,
  // whose programmed write demands transmission. `tx_interrupt`: the NIC raises its
  // transmit-completion interrupt (the host's driver decides what its routine costs). `fail`:
  // the run cannot go on (a memory refused the NIC's DMA).
  ConventionalNic(sc_core::sc_module_name name, Calendar& cal, const EtherSysConfig& c, net::EtherSegment& wire, uint32_t station,
                  TaskSpace& os, std::function<mem::TargetSocket&()> memory, host::Cpu& cpu, Stats& st,
                  std::function<void()> tx_interrupt, std::function<void(const std::string&)> fail);
  void transmit(uint32_t dst, Frame&& frame, Sent sent) override;
  void receive(Frame&& frame, RxReady ready) override;
  // The receive routine reads the frame from the buffer the NIC wrote it into, and frees it.
  Frame take(Rx& r) override;
  void power_off() override;
  // Time the bus's DMA takes for `bytes` (bursts of bus.max_burst, each with its overhead).
  uint64_t dma_ps(uint32_t bytes) const;
  // The kernel's DMA buffers: how many the driver has made (each kBufBytes, in host memory),
  // and the host physical address of buffer `b`.
  static constexpr uint32_t kBufBytes = 2048;
  uint32_t buffers() const { return static_cast<uint32_t>(bufs_.size()); }
  uint32_t buffers_free() const { return static_cast<uint32_t>(free_.size()); }
  uint64_t buffer_pa(uint32_t b) const { return bufs_[b].pa; }
  uint64_t dma_transports() const { return transports_; }

 private:
  void before_end_of_elaboration() override;
  // The register file behind pio_socket.
  void pio_b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  tlm::tlm_sync_enum pio_nb_transport_fw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& delay);
  void csr_write(tlm::tlm_generic_payload& gp);
  // The transmitter takes the descriptors posted since it last looked.
  void demand();
  // A frame in buffer `b` whose descriptor the transmitter has taken: into the MAC.
  void start(uint32_t dst, uint32_t b, Frame&& frame, Sent sent);
  // A free buffer (the driver makes one more from a page of the OS when none is).
  uint32_t take_buffer();
  void free_buffer(uint32_t b) { free_.push_back(b); }
  // The kernel's own accesses to a buffer (the CPU's, through the OS's view of its frames).
  void kernel_copy(bool to_memory, uint64_t pa, uint8_t* data, uint32_t n);
  // One DMA transfer over the socket; false when the memory refused it (the run fails). The
  // delay the memory annotates is added to *ps.
  bool dma_transfer(bool write, uint64_t pa, uint8_t* data, uint32_t n, uint64_t* ps);
  // A frame of `bytes` handed over now: when it is in the MAC (descriptor fetch, then DMA).
  uint64_t tx_ready_ps(uint32_t bytes);
  // A frame of `len` bytes arrived at the MAC now: when the stack may look at it.
  uint64_t rx_ready_ps(uint32_t len);
  // The frame (what the DMA read) is in the MAC: onto the wire; then the completion interrupt
  // and `sent`.
  void to_wire(uint32_t dst, Frame&& frame, Sent sent);
  // The transmit DMA reads the frame of buffer `b` for the MAC into `f` (empty when the memory
  // refused it), the memory's delay added to *ps.
  void dma_read_frame(uint32_t b, Frame& f, uint64_t* ps);
  // A streaming NIC takes its next frame (the one before has left the MAC, or it was idle).
  void stream_next();

  Calendar& cal_;
  const EtherSysConfig& c_;
  net::EtherSegment& wire_;
  const uint32_t station_;
  TaskSpace& os_;
  std::function<mem::TargetSocket&()> memory_;
  std::function<void()> tx_interrupt_;
  std::function<void(const std::string&)> fail_;
  uint64_t bus_free_ = 0, tx_free_ = 0;  // when the bus, and the transmit DMA, are next free
  // The kernel's buffers: where each lies, and the length of the frame it holds.
  struct Buf {
    uint64_t pa;
    uint32_t len;
  };
  std::vector<Buf> bufs_;
  std::vector<uint32_t> free_;
  uint64_t carve_pa_ = 0;
  uint32_t carve_left_ = 0;  // bytes of the last page given by the OS not yet made into buffers
  tlm::tlm_generic_payload gp_;
  uint64_t transports_ = 0;
  // A streaming NIC: frames waiting for it (station, buffer; `frame`: the vector the MAC's copy
  // will be read into) and whether one is in the MAC.
  struct Queued {
    uint32_t dst, buf;
    Frame frame;
    Sent sent;
  };
  std::deque<Queued> tx_stream_;
  std::deque<Queued> posted_;  // descriptors the driver posted, not yet taken by the NIC
  host::Cpu& cpu_;
  Counter &demands_, &csr_errors_;
  bool tx_streaming_ = false;
  uint64_t epoch_ = 0;  // bumped at power_off: work scheduled before it finds it changed
};

}  // namespace mbpsim::mbcf
