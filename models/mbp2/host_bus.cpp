#include "models/mbp2/host_bus.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/bytes.h"
#include "models/core/error.h"

namespace mbpsim::mbp2 {

HostBus::HostBus(const BusConfig& c, Stats& st, const std::string& n)
    : HostBus(sc_core::sc_module_name(n.substr(n.rfind('.') + 1).c_str()), c, st, n) {}

HostBus::HostBus(const sc_core::sc_module_name& module, const BusConfig& c, Stats& st, const std::string& n)
    : Unit(module),
      dma_socket("dma_socket"),
      pio_socket("pio_socket"),
      c_(c),
      grant_ps_(cycles_ps(c.overhead_cycles + static_cast<double>(c.max_burst) / c.width_bytes)),
      bytes_(st.counter(n + ".dma_bytes", "bytes moved by DMA over the host bus")),
      busy_ps_(st.counter(n + ".busy_ps", "time the host bus was in use")),
      wait_ps_(st.counter(n + ".wait_ps", "time DMA and programmed accesses waited for the bus")),
      pios_(st.counter(n + ".pio_writes", "programmed single-word writes by the host (doorbells, and the OS's writes to EM through the KLI)")) {
  pio_socket.register_b_transport(this, &HostBus::pio_b_transport);
  pio_socket.register_nb_transport_fw(this, &HostBus::pio_nb_transport_fw);
}

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

namespace {
// A retried store is answered: a b_transport call wakes with `d` to wait, an nb one gets its
// BEGIN_RESP on the backward path.
template <class Socket, class Retried>
void answer(Socket& socket, const Retried& r, sc_core::sc_time d) {
  if (r.id < 0) {
    *r.delay = d;
    *r.done = true;
    r.woken->notify();
  } else {
    tlm::tlm_phase ph = tlm::BEGIN_RESP;
    socket[r.id]->nb_transport_bw(*r.gp, ph, d);
  }
}
}  // namespace

void HostBus::power_off() {
  time_.stop_all(sim_now_ps());
  std::deque<Retried> gone;
  gone.swap(retried_);
  for (Retried& r : gone) {
    r.gp->set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
    answer(pio_socket, r, sc_core::SC_ZERO_TIME);
  }
}

// What the DMA transfers waited: the bus's running sum, which grows as later requests delay
// transfers in progress.
void HostBus::count_wait() {
  wait_ps_.inc(time_.wait(0) - waited_);
  waited_ = time_.wait(0);
}

// ------------------------------------------------------------------ the PIO target

bool HostBus::pio_offer(tlm::tlm_generic_payload& gp, uint64_t at, sc_core::sc_time& delay, bool again) {
  const uint32_t n = gp.get_data_length();
  if (!gp.is_write()) {
    gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);  // the doorbells are write-only
  } else if (n != 4 || gp.get_streaming_width() < n) {
    gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);  // one word at a time
  } else if (gp.get_byte_enable_ptr()) {
    gp.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
  } else {
    if (!regs_) internal_error(std::string(name()) + ": no registers behind the PIO socket");
    const PioTarget::Answer a = regs_->pio_write(gp.get_address(), load_be32(gp.get_data_ptr()), at, again);
    if (a.kind == PioTarget::Answer::Busy) return false;
    if (a.kind == PioTarget::Answer::AddressError) {
      gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    } else if (a.kind == PioTarget::Answer::Error) {
      gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
    } else {
      gp.set_response_status(tlm::TLM_OK_RESPONSE);
      delay = sc_core::sc_time::from_value(a.done_ps - sim_now_ps());  // the kernel's resolution is 1 ps
      return true;
    }
  }
  delay = sc_core::sc_time::from_value(at - sim_now_ps());
  return true;
}

tlm::tlm_sync_enum HostBus::pio_nb_transport_fw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& delay) {
  if (ph != tlm::BEGIN_REQ) return tlm::TLM_COMPLETED;  // END_RESP: nothing more to do
  const uint64_t at = sim_now_ps() + static_cast<uint64_t>(delay.value());
  // Behind stores already retried, a store waits its turn.
  if (retried_.empty() && pio_offer(gp, at, delay, false)) return tlm::TLM_COMPLETED;
  retried_.push_back({id, &gp, nullptr, nullptr, nullptr});
  return tlm::TLM_ACCEPTED;
}

void HostBus::pio_b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  const uint64_t at = sim_now_ps() + static_cast<uint64_t>(delay.value());
  if (retried_.empty() && pio_offer(gp, at, delay, false)) return;
  // Busy: the call waits while the bus retries the store; pio_ready finishes it.
  sc_core::sc_event woken;
  bool done = false;
  sc_core::sc_time took;
  retried_.push_back({-1, &gp, &woken, &took, &done});
  while (!done) sc_core::wait(woken);
  delay = took;
}

void HostBus::pio_ready() {
  while (!retried_.empty()) {
    const Retried r = retried_.front();
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    if (!pio_offer(*r.gp, sim_now_ps(), d, true)) return;  // still busy: it stays first
    retried_.pop_front();
    answer(pio_socket, r, d);
  }
}

}  // namespace mbpsim::mbp2
