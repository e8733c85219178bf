#include "models/mbp2/em.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"
#include "models/mbp2/kli.h"

namespace mbpsim::mbp2 {

const char* name(Route r) {
  switch (r) {
    case Route::Host: return "host";
    case Route::Mac: return "mac";
    case Route::Pme: return "pme";
    case Route::Crypto: return "crypto";
  }
  return "?";
}

Em::Em(const EmConfig& c, Stats& st, const std::string& n)
    : Unit(n),
      c_(c) {
  for (int i = 0; i < kRoutes; ++i) {
    const std::string r = n + "." + mbp2::name(static_cast<Route>(i));
    bytes_[i] = &st.counter(r + ".bytes", "bytes through this route of the card memory");
    busy_[i] = &st.counter(r + ".busy_ps", "time the card memory served this route");
    wait_[i] = &st.counter(r + ".wait_ps", "time this route waited for the card memory (contention)");
  }
}

uint32_t Em::carve(uint32_t bytes) {
  const uint32_t off = static_cast<uint32_t>(mem_.size());
  if (static_cast<uint64_t>(off) + bytes + Kli::kBytes > c_.bytes) internal_error("the card memory's structures exceed em.bytes");
  mem_.resize(off + (bytes + 3) / 4 * 4, 0);
  return off;
}

uint32_t Em::load32(uint32_t off) const {
  if (static_cast<uint64_t>(off) + 4 > mem_.size()) internal_error("an EM load past the carved memory");
  return static_cast<uint32_t>(mem_[off]) << 24 | static_cast<uint32_t>(mem_[off + 1]) << 16 |
         static_cast<uint32_t>(mem_[off + 2]) << 8 | mem_[off + 3];
}

void Em::store32(uint32_t off, uint32_t v) {
  if (static_cast<uint64_t>(off) + 4 > mem_.size()) internal_error("an EM store past the carved memory");
  for (int i = 0; i < 4; ++i) mem_[off + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

void Em::write(uint32_t off, const uint8_t* p, uint32_t n) {
  if (static_cast<uint64_t>(off) + n > mem_.size()) internal_error("an EM write past the carved memory");
  std::copy(p, p + n, mem_.begin() + off);
}

void Em::read_into(uint32_t off, uint8_t* out, uint32_t n) const {
  if (static_cast<uint64_t>(off) + n > mem_.size()) internal_error("an EM read past the carved memory");
  std::copy(mem_.begin() + off, mem_.begin() + off + n, out);
}

std::vector<uint8_t> Em::read(uint32_t off, uint32_t n) const {
  if (static_cast<uint64_t>(off) + n > mem_.size()) internal_error("an EM read past the carved memory");
  return std::vector<uint8_t>(mem_.begin() + off, mem_.begin() + off + n);
}

uint64_t Em::access_ps(uint32_t bytes) const {
  const double bursts = std::ceil(std::max<uint32_t>(bytes, 1) / static_cast<double>(c_.burst_bytes));
  const double words = std::ceil(std::max<uint32_t>(bytes, 1) / static_cast<double>(c_.width_bytes));
  return ps_of(bursts * c_.access_cycles + words, c_.clock_mhz);
}

FairShare::Booking Em::access(Route r, uint64_t at, uint32_t bytes, uint64_t pace) { return book(r, at, bytes, access_ps(bytes), pace); }

FairShare::Booking Em::scattered(Route r, uint64_t at, uint32_t accesses, uint32_t each, uint64_t pace) {
  return book(r, at, static_cast<uint64_t>(accesses) * each, accesses * access_ps(each), pace);
}

FairShare::Booking Em::book(Route r, uint64_t at, uint64_t bytes, uint64_t work, uint64_t pace) {
  const int i = static_cast<int>(r);
  FairShare::Booking b = time_.book(sim_now_ps(), at, work, static_cast<uint32_t>(i), pace);
  bytes_[i]->inc(bytes);
  busy_[i]->inc(work);
  // Every route's wait: this access may have delayed the others' in progress.
  for (int k = 0; k < kRoutes; ++k) {
    const uint64_t w = time_.wait(static_cast<uint32_t>(k));
    wait_[k]->inc(w - waited_[k]);
    waited_[k] = w;
  }
  return b;
}

void Em::power_off() { time_.stop_all(sim_now_ps()); }

Finish host_transfer(HostBus& bus, Em& em, uint64_t at, const HostBus::Spans& spans, uint32_t em_bytes) {
  return Finish(at, bus.dma(at, spans), em.access(Route::Host, at, em_bytes, bus.dma_ps(spans)));
}

bool EmPort::read(uint64_t addr, uint32_t, uint8_t* out, uint32_t n) {
  if (addr + n > em_.size()) return false;
  em_.read_into(static_cast<uint32_t>(addr), out, n);
  return true;
}

bool EmPort::write(uint64_t addr, uint32_t, const uint8_t* in, uint32_t n) {
  if (addr + n > em_.size()) return false;
  em_.write(static_cast<uint32_t>(addr), in, n);
  return true;
}

}  // namespace mbpsim::mbp2
