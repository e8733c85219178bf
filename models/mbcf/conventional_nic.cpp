// The conventional NICs of MBCF/Ether (conventional_nic.h): descriptor fetch and bus DMA on
// transmit, DMA and descriptor write-back on receive, the LANCE's streaming transmit; the
// frames' bytes in the kernel's buffers in host memory, moved by the NIC's DMA socket.
#include "models/mbcf/conventional_nic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "models/core/bytes.h"
#include "models/core/error.h"
#include "models/core/module_tree.h"
#include "models/mbcf/ether_system.h"

namespace mbpsim::mbcf {

ConventionalNic::ConventionalNic(sc_core::sc_module_name name, Calendar& cal, const EtherSysConfig& c, net::EtherSegment& wire,
                                 uint32_t station, TaskSpace& os, std::function<mem::TargetSocket&()> memory, host::Cpu& cpu,
                                 Stats& st, std::function<void()> tx_interrupt, std::function<void(const std::string&)> fail)
    : sc_core::sc_module(name),
      dma("dma"),
      pio_socket("pio_socket"),
      cal_(cal),
      c_(c),
      wire_(wire),
      station_(station),
      os_(os),
      memory_(std::move(memory)),
      tx_interrupt_(std::move(tx_interrupt)),
      fail_(std::move(fail)),
      cpu_(cpu),
      demands_(st.counter(stat_name(*this, "tx_demands"), "transmit demands stored into CSR0 (TDMD): one per frame the driver posts")),
      csr_errors_(st.counter(stat_name(*this, "csr_errors"), "programmed accesses to the registers answered with an error response")) {
  pio_socket.register_b_transport(this, &ConventionalNic::pio_b_transport);
  pio_socket.register_nb_transport_fw(this, &ConventionalNic::pio_nb_transport_fw);
}

void ConventionalNic::before_end_of_elaboration() {
  dma.bind(memory_());
  cpu_.pio.bind(pio_socket);  // the driver's stores into the registers
}

// ------------------------------------------------------------------ the registers

void ConventionalNic::csr_write(tlm::tlm_generic_payload& gp) {
  if (gp.get_command() != tlm::TLM_WRITE_COMMAND) {
    gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
  } else if (gp.get_data_length() != 4 || gp.get_streaming_width() != 4) {
    gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
  } else if (gp.get_byte_enable_ptr()) {
    gp.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
  } else if (gp.get_address() != kCsr0) {
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
  } else {
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
    if (load_be32(gp.get_data_ptr()) & kTdmd) {
      demands_.inc();
      demand();
    }
    return;
  }
  csr_errors_.inc();
}

void ConventionalNic::pio_b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time&) { csr_write(gp); }

tlm::tlm_sync_enum ConventionalNic::pio_nb_transport_fw(int, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time&) {
  if (ph != tlm::BEGIN_REQ) return tlm::TLM_ACCEPTED;
  csr_write(gp);  // posted: taken at once
  ph = tlm::BEGIN_RESP;
  return tlm::TLM_COMPLETED;
}

void ConventionalNic::demand() {
  while (!posted_.empty()) {
    Queued q = std::move(posted_.front());
    posted_.pop_front();
    start(q.dst, q.buf, std::move(q.frame), std::move(q.sent));
  }
}

uint64_t ConventionalNic::dma_ps(uint32_t bytes) const {
  const double burst = c_.bus.max_burst, width = c_.bus.width_bytes;
  const double bursts = std::ceil(bytes / burst);
  const double cyc = bursts * (burst / width + c_.bus.overhead_cycles);
  return static_cast<uint64_t>(std::llround(cyc * 1e6 / c_.bus.clock_mhz));
}

// ------------------------------------------------------------------ the kernel's buffers

uint32_t ConventionalNic::take_buffer() {
  if (!free_.empty()) {
    const uint32_t b = free_.back();
    free_.pop_back();
    return b;
  }
  // One more cluster: from what is left of the OS's last page, or from fresh pages (a cluster
  // larger than a page takes consecutive frames, which the OS gives in order).
  const uint32_t pb = c_.page_bytes;
  if (carve_left_ < kBufBytes) {
    const uint32_t pages = std::max<uint32_t>(1, kBufBytes / pb);
    uint32_t first = os_.alloc_frame();
    for (uint32_t i = 1; i < pages; ++i)
      if (os_.alloc_frame() != first + i) internal_error("the OS gave a NIC cluster non-consecutive frames");
    carve_pa_ = static_cast<uint64_t>(first) * pb;
    carve_left_ = pages * pb;
  }
  bufs_.push_back(Buf{carve_pa_, 0});
  carve_pa_ += kBufBytes;
  carve_left_ -= kBufBytes;
  return static_cast<uint32_t>(bufs_.size() - 1);
}

void ConventionalNic::kernel_copy(bool to_memory, uint64_t pa, uint8_t* data, uint32_t n) {
  const uint32_t pb = c_.page_bytes;
  while (n) {
    const uint32_t k = std::min<uint32_t>(n, pb - static_cast<uint32_t>(pa % pb));
    uint8_t* m = os_.phys_bytes(pa, k);
    if (!m) internal_error("a NIC buffer outside the host's frames");
    if (to_memory) std::memcpy(m, data, k);
    else std::memcpy(data, m, k);
    pa += k, data += k, n -= k;
  }
}

bool ConventionalNic::dma_transfer(bool write, uint64_t pa, uint8_t* data, uint32_t n, uint64_t* ps) {
  mem::dma_payload(gp_, write, pa, data, n);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  ++transports_;
  dma->b_transport(gp_, delay);
  *ps += static_cast<uint64_t>(delay.value());  // the kernel's resolution is 1 ps (core/sim_time.h)
  if (gp_.is_response_ok()) return true;
  char buf[200];
  std::snprintf(buf, sizeof buf, "node %u: host memory refused the NIC's DMA %s of [0x%llx, 0x%llx) (%s)", station_,
                write ? "write" : "read", static_cast<unsigned long long>(pa), static_cast<unsigned long long>(pa + n),
                gp_.get_response_string().c_str());
  fail_(buf);
  return false;
}

void ConventionalNic::dma_read_frame(uint32_t b, Frame& f, uint64_t* ps) {
  f.resize(bufs_[b].len);
  if (!dma_transfer(false, bufs_[b].pa, f.data(), bufs_[b].len, ps)) f.clear();
}

// ------------------------------------------------------------------ transmit

void ConventionalNic::transmit(uint32_t dst, Frame&& frame, Sent sent) {
  if (frame.size() > kBufBytes) return sent(false);  // no buffer holds it (nor Ethernet carries it)
  // The stack's copy of the frame is in a kernel buffer (its time is the stack's).
  const uint32_t b = take_buffer();
  const uint32_t len = static_cast<uint32_t>(frame.size());
  bufs_[b].len = len;
  kernel_copy(true, bufs_[b].pa, frame.data(), len);
  // The descriptor, then the demand: the NIC takes it when the store reaches its register.
  posted_.push_back(Queued{dst, b, std::move(frame), std::move(sent)});
  cpu_.pio_write(kCsr0, kTdmd, [this](uint64_t, bool ok) {
    if (!ok) fail_("node " + std::to_string(station_) + ": the NIC refused the transmit demand");
  });
}

void ConventionalNic::start(uint32_t dst, uint32_t b, Frame&& frame, Sent sent) {
  const uint32_t len = bufs_[b].len;
  if (c_.nic_tx_streams) {
    tx_stream_.push_back(Queued{dst, b, std::move(frame), std::move(sent)});
    if (!tx_streaming_) stream_next();
    return;
  }
  uint64_t end = tx_ready_ps(len);
  // The DMA reads the frame from the buffer (the transfer issued ahead, at its booked time);
  // the memory's delay lengthens it.
  uint64_t extra = 0;
  dma_read_frame(b, frame, &extra);  // (into the handed-over vector: the MAC's copy)
  end += extra;
  bus_free_ = tx_free_ = end;
  cal_.at(end, [this, epoch = epoch_, dst, b, f = std::move(frame), k = std::move(sent)]() mutable {
    if (epoch_ != epoch) return;  // the power went: the NIC forgot it
    free_buffer(b);
    if (f.empty()) return;  // the memory refused the DMA: the run has failed
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
  Queued q = std::move(tx_stream_.front());
  tx_stream_.pop_front();
  uint64_t lat = static_cast<uint64_t>(c_.nic_tx_latency_ns * 1000);
  dma_read_frame(q.buf, q.frame, &lat);
  cal_.after(lat, [this, epoch = epoch_, q = std::move(q)]() mutable {
    if (epoch_ != epoch) return;  // the power went: the NIC forgot it
    free_buffer(q.buf);
    if (q.frame.empty()) return;  // the memory refused the DMA: the run has failed
    to_wire(q.dst, std::move(q.frame), std::move(q.sent));
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

// ------------------------------------------------------------------ receive

void ConventionalNic::receive(Frame&& frame, RxReady ready) {
  if (frame.size() > kBufBytes) return ready(nullptr);  // longer than any receive buffer: dropped
  const uint32_t len = static_cast<uint32_t>(frame.size());
  uint64_t t = rx_ready_ps(len);
  // The DMA writes the frame into a buffer of the stack's ring (issued ahead, at its booked
  // time); the memory's delay lengthens it.
  const uint32_t b = take_buffer();
  bufs_[b].len = len;
  uint64_t extra = 0;
  const bool ok = dma_transfer(true, bufs_[b].pa, frame.data(), len, &extra);
  bus_free_ += extra;
  t += extra;
  cal_.at(t, [this, epoch = epoch_, b, ok, k = std::move(ready)]() mutable {
    if (epoch_ != epoch) return;  // the power went: the NIC forgot it (and the stack its ring)
    if (!ok) {                    // the memory refused the DMA: the run has failed
      free_buffer(b);
      return k(nullptr);
    }
    Rx r{{}, b + 1ull};
    k(&r);
  });
}

ConventionalNic::Frame ConventionalNic::take(Rx& r) {
  if (r.tag == 0) return std::move(r.bytes);
  const uint32_t b = static_cast<uint32_t>(r.tag - 1);
  const Buf& x = bufs_[b];
  Frame f;
  if (const uint8_t* m = os_.phys_bytes(x.pa, x.len)) {  // the buffer lies in one page
    f.assign(m, m + x.len);
  } else {
    f.resize(x.len);
    kernel_copy(false, x.pa, f.data(), x.len);
  }
  free_buffer(b);
  return f;
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
  posted_.clear();
  tx_streaming_ = false;
  ++epoch_;
  // The driver starts again with every buffer free (the stack's ring is empty too).
  free_.clear();
  for (uint32_t b = static_cast<uint32_t>(bufs_.size()); b-- > 0;) free_.push_back(b);
}

}  // namespace mbpsim::mbcf
