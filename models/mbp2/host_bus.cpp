#include "models/mbp2/host_bus.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"

namespace mbpsim::mbp2 {

HostBus::HostBus(const BusConfig& c, Stats& st, const std::string& n)
    : HostBus(sc_core::sc_module_name(n.substr(n.rfind('.') + 1).c_str()), c, st, n) {}

HostBus::HostBus(const sc_core::sc_module_name& module, const BusConfig& c, Stats& st, const std::string& n)
    : Unit(module),
      dma_socket("dma_socket"),
      c_(c),
      grant_ps_(cycles_ps(c.overhead_cycles + static_cast<double>(c.max_burst) / c.width_bytes)),
      bytes_(st.counter(n + ".dma_bytes", "bytes moved by DMA over the host bus")),
      busy_ps_(st.counter(n + ".busy_ps", "time the host bus was in use")),
      wait_ps_(st.counter(n + ".wait_ps", "time DMA and programmed accesses waited for the bus")),
      pios_(st.counter(n + ".pio_writes", "programmed single-word writes by the host (doorbells)")) {}

void HostBus::before_end_of_elaboration() {
  if (!memory_) internal_error(std::string(name()) + ": no host memory for the DMA socket");
  dma_socket.bind(memory_());
}

bool HostBus::transport(tlm::tlm_command cmd, uint64_t addr, uint8_t* data, uint32_t n) {
  mem::dma_payload(gp_, cmd == tlm::TLM_WRITE_COMMAND, addr, data, n);
  dma_socket->b_transport(gp_, delay_);
  return gp_.is_response_ok();
}

bool HostBus::read(uint64_t addr, uint32_t, uint8_t* out, uint32_t n) { return transport(tlm::TLM_READ_COMMAND, addr, out, n); }
bool HostBus::write(uint64_t addr, uint32_t, const uint8_t* in, uint32_t n) {
  return transport(tlm::TLM_WRITE_COMMAND, addr, const_cast<uint8_t*>(in), n);  // a write's data is only read
}

uint64_t HostBus::take_delay_ps() {
  const uint64_t ps = static_cast<uint64_t>(delay_.value());  // the kernel's resolution is 1 ps (core/sim_time.h)
  delay_ = sc_core::SC_ZERO_TIME;
  return ps;
}

uint64_t HostBus::cycles_ps(double cycles) const { return ps_of(cycles, c_.clock_mhz); }

double HostBus::transfer_cycles(uint64_t addr, uint32_t bytes) const {
  double cyc = 0;
  const uint64_t w = c_.width_bytes;
  if (c_.kind == BusConfig::Kind::Pci) {
    // Any alignment: data phases cover the bytes' span of bus words.
    uint64_t a = addr, left = bytes;
    while (left > 0) {
      const uint64_t n = std::min<uint64_t>(left, c_.max_burst);
      const uint64_t phases = ((a + n + w - 1) / w) - (a / w);
      cyc += c_.overhead_cycles + static_cast<double>(phases);
      a += n;
      left -= n;
    }
    return cyc;
  }
  // SBus: each burst a naturally aligned power of two of at least one word, at most max_burst.
  uint64_t a = addr / w * w, end = (addr + bytes + w - 1) / w * w;
  while (a < end) {
    uint64_t n = c_.max_burst;
    while (n > w && (a % n != 0 || a + n > end)) n /= 2;
    cyc += c_.overhead_cycles + static_cast<double>(n / w);
    a += n;
  }
  return cyc;
}

uint64_t HostBus::dma_ps(const Spans& spans) const {
  double cyc = 0;
  for (const Span& sp : spans) cyc += transfer_cycles(sp.addr, sp.bytes);
  return cycles_ps(cyc);
}

FairShare::Booking HostBus::dma(uint64_t at, const Spans& spans) {
  for (const Span& sp : spans) bytes_.inc(sp.bytes);
  const uint64_t dur = dma_ps(spans);
  FairShare::Booking b = time_.book(sim_now_ps(), at, dur);
  busy_ps_.inc(dur);
  count_wait();
  return b;
}

uint64_t HostBus::pio(uint64_t at) {
  // Arbitration is per burst: a programmed write waits for the burst in progress, not for the
  // whole DMA transfer, which it then delays by its own length.
  const uint64_t dur = cycles_ps(c_.pio_cycles);
  const auto [start, end] = time_.priority(sim_now_ps(), at, dur, grant_ps_);
  pios_.inc();
  busy_ps_.inc(dur);
  wait_ps_.inc(start - at);
  count_wait();
  return end;
}

void HostBus::power_off() { time_.stop_all(sim_now_ps()); }

// What the DMA transfers waited: the bus's running sum, which grows as later requests delay
// transfers in progress.
void HostBus::count_wait() {
  wait_ps_.inc(time_.wait(0) - waited_);
  waited_ = time_.wait(0);
}

}  // namespace mbpsim::mbp2
