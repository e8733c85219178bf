#include "models/mbp2/units.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"
#include "models/core/mutant.h"
#include "models/mbp2/inet.h"

namespace mbpsim::mbp2 {

Unit::Unit(const std::string& stat_name, const char* module)
    : sc_core::sc_module(sc_core::sc_module_name(module ? module : stat_name.substr(stat_name.rfind('.') + 1).c_str())) {}

namespace {
uint64_t ps_of(double cycles, double mhz) { return static_cast<uint64_t>(std::llround(cycles * 1e6 / mhz)); }
// The simulated present: bookings that ended by now can be forgotten.
uint64_t now_ps() { return static_cast<uint64_t>(sc_core::sc_time_stamp().value()); }
}  // namespace

// ------------------------------------------------------------------ BIU

HostBus::HostBus(const BusConfig& c, Stats& st, const std::string& n)
    : Unit(n),
      c_(c),
      grant_ps_(cycles_ps(c.overhead_cycles + static_cast<double>(c.max_burst) / c.width_bytes)),
      bytes_(st.counter(n + ".dma_bytes", "bytes moved by DMA over the host bus")),
      busy_ps_(st.counter(n + ".busy_ps", "time the host bus was in use")),
      wait_ps_(st.counter(n + ".wait_ps", "time DMA and programmed accesses waited for the bus")),
      pios_(st.counter(n + ".pio_writes", "programmed single-word writes by the host (doorbells)")) {}

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
  FairShare::Booking b = time_.book(now_ps(), at, dur);
  busy_ps_.inc(dur);
  count_wait();
  return b;
}

uint64_t HostBus::pio(uint64_t at) {
  // Arbitration is per burst: a programmed write waits for the burst in progress, not for the
  // whole DMA transfer, which it then delays by its own length.
  const uint64_t dur = cycles_ps(c_.pio_cycles);
  const auto [start, end] = time_.priority(now_ps(), at, dur, grant_ps_);
  pios_.inc();
  busy_ps_.inc(dur);
  wait_ps_.inc(start - at);
  count_wait();
  return end;
}

void HostBus::power_off() { time_.stop_all(now_ps()); }

// What the DMA transfers waited: the bus's running sum, which grows as later requests delay
// transfers in progress.
void HostBus::count_wait() {
  wait_ps_.inc(time_.wait(0) - waited_);
  waited_ = time_.wait(0);
}

// ------------------------------------------------------------------ EM

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
  FairShare::Booking b = time_.book(now_ps(), at, work, static_cast<uint32_t>(i), pace);
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

void Em::power_off() { time_.stop_all(now_ps()); }

Finish host_transfer(HostBus& bus, Em& em, uint64_t at, const HostBus::Spans& spans, uint32_t em_bytes) {
  return Finish(at, bus.dma(at, spans), em.access(Route::Host, at, em_bytes, bus.dma_ps(spans)));
}

// ------------------------------------------------------------------ TLB

Tlb::Tlb(uint32_t entries, Stats& st, const std::string& n)
    : Unit(n),
      entries_(entries),
      hits_(st.counter(n + ".hits", "translations found in the TLB")),
      misses_(st.counter(n + ".misses", "translations missing: the PME refills from the page tables in EM")),
      evictions_(st.counter(n + ".evictions", "entries replaced (least recently used)")) {
  if (entries_ == 0) internal_error("a TLB needs at least one entry");
}

bool Tlb::lookup(uint32_t ctx, uint64_t vpage, uint64_t* ppage) {
  auto it = map_.find(key(ctx, vpage));
  if (it == map_.end() || it->second->ctx != ctx || it->second->vpage != vpage) {
    misses_.inc();
    return false;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  if (ppage) *ppage = it->second->ppage;
  hits_.inc();
  return true;
}

void Tlb::insert(uint32_t ctx, uint64_t vpage, uint64_t ppage) {
  const uint64_t k = key(ctx, vpage);
  auto it = map_.find(k);
  if (it != map_.end()) {
    it->second->ppage = ppage;
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  if (lru_.size() == entries_) {
    map_.erase(key(lru_.back().ctx, lru_.back().vpage));
    lru_.pop_back();
    evictions_.inc();
  }
  lru_.push_front(Entry{ctx, vpage, ppage});
  map_[k] = lru_.begin();
}

bool Tlb::probe(uint32_t ctx, uint64_t vpage, uint64_t* ppage) const {
  auto it = map_.find(key(ctx, vpage));
  if (it == map_.end() || it->second->ctx != ctx || it->second->vpage != vpage) return false;
  *ppage = it->second->ppage;
  return true;
}

void Tlb::clear() {
  lru_.clear();
  map_.clear();
}

bool Tlb::invalidate(uint32_t ctx, uint64_t vpage) {
  auto it = map_.find(key(ctx, vpage));
  if (it == map_.end()) return false;
  lru_.erase(it->second);
  map_.erase(it);
  return true;
}

void Tlb::flush_context(uint32_t ctx) {
  for (auto it = lru_.begin(); it != lru_.end();) {
    if (it->ctx == ctx) {
      map_.erase(key(it->ctx, it->vpage));
      it = lru_.erase(it);
    } else {
      ++it;
    }
  }
}

// ------------------------------------------------------------------ PME

Pme::Pme(Calendar& cal, const PmeConfig& c, Stats& st, const std::string& n)
    : Unit(n),
      cal_(cal),
      c_(c),
      st_(st),
      name_(n),
      busy_(st.counter(n + ".busy_ps", "time the PME ran firmware (interrupt entry included)")),
      interrupts_(st.counter(n + ".interrupts", "interrupts taken by the PME")),
      int_ps_(st.counter(n + ".interrupt_ps", "time spent entering and leaving interrupts (0 with register sets)")),
      mem_stall_(st.counter(n + ".em_stall_ps", "time handlers waited for their EM accesses beyond their own run (the other routes had the memory)")),
      coalesced_(st.counter(n + ".interrupts_coalesced", "unit completions collected by a handler already running for their ring (no interrupt entry)")) {}

double Pme::cpi() const {
  const double bus = c_.clock_mhz / c_.bus_mhz;  // core cycles per processor-bus cycle
  // With explicit fill and write-back instructions the shared areas are cacheable: one line
  // fill replaces several uncached accesses (taken as a quarter of them).
  const double shared = c_.shared_per_instr * (c_.cache_control ? 1.0 / kLineWords : 1.0);
  return c_.base_cpi + c_.imiss_per_instr * c_.line_fill_bus_cycles * bus + shared * c_.shared_bus_cycles * bus +
         c_.store_per_instr * c_.wt_stall_bus_cycles * bus;
}

uint64_t Pme::instr_ps(double instructions) const { return ps_of(instructions * cpi(), c_.clock_mhz); }

double Pme::em_accesses(uint64_t dur) const {
  const double instructions = static_cast<double>(dur) * c_.clock_mhz / 1e6 / cpi();
  return instructions * c_.shared_per_instr * (c_.cache_control ? 1.0 / kLineWords : 1.0);
}

uint64_t Pme::kernel_ps(double instructions, double shared_words) const {
  const double bus = c_.clock_mhz / c_.bus_mhz;
  const double per_word = c_.cache_control ? c_.line_fill_bus_cycles / kLineWords : c_.shared_bus_cycles;
  const double cyc = instructions * (c_.base_cpi + c_.store_per_instr * c_.wt_stall_bus_cycles * bus) + shared_words * per_word * bus;
  return ps_of(cyc, c_.clock_mhz);
}

void Pme::run(const char* handler, Priority pr, bool interrupt, uint64_t dur, std::function<void()> fn, Hold hold) {
  push(Job{pr, seq_++, handler, interrupt, -1, dur, std::move(fn), std::move(hold)});
}

void Pme::run_from(int source, const char* handler, Priority pr, uint64_t dur, std::function<void()> fn, Hold hold) {
  push(Job{pr, seq_++, handler, source >= 0, source < 0 ? -1 : source, dur, std::move(fn), std::move(hold)});
}

void Pme::push(Job j) {
  if (in_fn_ && !j.interrupt && j.source < 0) j.source = in_source_;
  q_.push(std::move(j));
  if (!running_) next();
}

void Pme::next() {
  if (q_.empty()) {
    running_ = false;
    in_source_ = -1;  // the handler found its ring empty and returned
    return;
  }
  running_ = true;
  // When the next run is a completion of the ring whose handler just ran, that handler finds
  // it before it returns (it loops while its ring has done entries): no new entry. The order
  // stays priority, then arrival: a handler does not keep the PME from a waiting interrupt by
  // looping (the others would starve while its unit keeps completing).
  Job j = std::move(const_cast<Job&>(q_.top()));
  q_.pop();
  const bool same_handler = j.source >= 0 && j.source == in_source_;
  in_source_ = j.source;
  uint64_t dur = j.dur;
  if (j.interrupt && same_handler) {
    coalesced_.inc();  // the handler found it in its ring: no entry
  } else if (j.interrupt) {
    interrupts_.inc();
    const uint64_t e = interrupt_ps();
    int_ps_.inc(e);
    dur += e;
  }
  busy_.inc(dur);
  auto it = per_handler_.find(j.handler);
  if (it == per_handler_.end())
    it = per_handler_.emplace(j.handler, &st_.counter(name_ + ".handler." + j.handler + "_ps", "firmware time in this handler")).first;
  it->second->inc(dur);
  // Its uncached words (or line fills) go to EM over the run, one access each.
  FairShare::Booking mem;
  if (em_) {
    const auto n = static_cast<uint32_t>(std::llround(em_accesses(dur)));
    if (n > 0) mem = em_->scattered(Route::Pme, cal_.now_ps(), n, c_.cache_control ? 4 * kLineWords : 4, dur);
  }
  Counter* handler = it->second;
  if (!j.hold) {
    cal_.after(dur, [this, mem, handler, fn = std::move(j.fn)]() mutable {
      if (mem.end() > cal_.now_ps()) {  // (the common case, served in time, builds no continuation)
        return wait_mem(std::move(mem), handler, [this, fn = std::move(fn)] { end_run(fn); });
      }
      end_run(fn);
    });
    return;
  }
  cal_.after(dur, [this, mem, fn = std::move(j.fn), hold = std::move(j.hold), handler]() mutable {
    wait_mem(std::move(mem), handler, [this, fn = std::move(fn), hold = std::move(hold), handler]() mutable {
      const uint64_t t0 = cal_.now_ps();
      hold([this, t0, handler, fn = std::move(fn)] {
        const uint64_t held = cal_.now_ps() - t0;
        busy_.inc(held);
        handler->inc(held);
        end_run(fn);
      });
    });
  });
}

void Pme::end_run(const std::function<void()>& fn) {
  // What the handler starts for later in its own run (a further step, with no interrupt of
  // its own) belongs to the same handler: `push` gives it the handler's source.
  in_fn_ = true;
  fn();
  in_fn_ = false;
  next();
}

void Pme::wait_mem(FairShare::Booking mem, Counter* handler, std::function<void()> k) {
  const uint64_t now = cal_.now_ps(), end = mem.end();
  if (end <= now) return k();
  // The run's last accesses are still waiting for the memory: the PME stalls on them.
  busy_.inc(end - now);
  handler->inc(end - now);
  mem_stall_.inc(end - now);
  cal_.at(end, [this, mem = std::move(mem), handler, k = std::move(k)]() mutable { wait_mem(std::move(mem), handler, std::move(k)); });
}

// ------------------------------------------------------------------ ULI

Kli::Kli(HostBus& bus, Stats& st, const std::string& n)
    : Unit(n),
      bus_(bus),
      mem_(kBytes, 0),
      writes_(st.counter(n + ".host_writes", "programmed word writes by the host kernel into EM")),
      reads_(st.counter(n + ".host_reads", "programmed word reads by the host kernel from EM")) {}

void Kli::check(uint32_t off, uint32_t n) const {
  if (static_cast<uint64_t>(off) + n > mem_.size()) internal_error("a KLI access past the kernel area of EM");
}

uint64_t Kli::write(uint64_t at, uint32_t off, const uint8_t* p, uint32_t n) {
  check(off, n);
  std::copy(p, p + n, mem_.begin() + off);
  for (uint32_t w = 0; w < (n + 3) / 4; ++w) {
    at = bus_.pio(at);
    writes_.inc();
  }
  return at;
}

uint64_t Kli::read(uint64_t at, uint32_t off, uint8_t* p, uint32_t n) {
  check(off, n);
  std::copy(mem_.begin() + off, mem_.begin() + off + n, p);
  for (uint32_t w = 0; w < (n + 3) / 4; ++w) {
    at = bus_.pio(at);  // a read waits for the data to come back: the same bus tenure
    reads_.inc();
  }
  return at;
}

uint32_t Kli::load32(uint32_t off) const {
  check(off, 4);
  return static_cast<uint32_t>(mem_[off]) << 24 | static_cast<uint32_t>(mem_[off + 1]) << 16 |
         static_cast<uint32_t>(mem_[off + 2]) << 8 | mem_[off + 3];
}

void Kli::store32(uint32_t off, uint32_t v) {
  check(off, 4);
  for (int i = 0; i < 4; ++i) mem_[off + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

Icu::Icu(Stats& st, const std::string& n)
    : Unit(n),
      to_host_(st.counter(n + ".to_host", "interrupts with a 64-bit message from the PME to the host")),
      to_pme_(st.counter(n + ".to_pme", "interrupts with a 64-bit message from the host to the PME")) {}

void Icu::to_host(uint64_t m) {
  host_.push_back(m);
  to_host_.inc();
}
void Icu::to_pme(uint64_t m) {
  pme_.push_back(m);
  to_pme_.inc();
}
bool Icu::take_for_host(uint64_t* m) {
  if (host_.empty()) return false;
  *m = host_.front();
  host_.pop_front();
  return true;
}
bool Icu::take_for_pme(uint64_t* m) {
  if (pme_.empty()) return false;
  *m = pme_.front();
  pme_.pop_front();
  return true;
}

Uli::Uli(Kli& kli, Stats& st, const std::string& n)
    : Unit(n),
      kli_(kli),
      rings_(st.counter(n + ".doorbells", "doorbell writes accepted")),
      rejected_(st.counter(n + ".rejected", "doorbell writes through an alias that is not the writer's own (ignored)")) {}

namespace {
std::array<uint8_t, 4> be_bytes(uint32_t v) {
  return {static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
}
}  // namespace

uint64_t Uli::assign(uint32_t alias, uint32_t ptask, uint64_t at) {
  if (alias >= Kli::kAliases) internal_error("doorbell alias " + std::to_string(alias) + " beyond the alias table");
  const auto b = be_bytes(ptask + 1);
  return kli_.write(at, Kli::kAliasTable + 4 * alias, b.data(), 4);
}

uint64_t Uli::revoke(uint32_t alias, uint64_t at) {
  if (alias >= Kli::kAliases) return at;
  const auto b = be_bytes(0);
  return kli_.write(at, Kli::kAliasTable + 4 * alias, b.data(), 4);
}

int64_t Uli::ring(uint32_t alias, uint32_t ringing_ptask) {
  const uint32_t e = alias < Kli::kAliases ? kli_.load32(Kli::kAliasTable + 4 * alias) : 0;
  if (e == 0 || e - 1 != ringing_ptask) {
    rejected_.inc();
    return -1;
  }
  rings_.inc();
  return e - 1;
}

int64_t Uli::alias_of(uint32_t ptask) const {
  for (uint32_t a = 0; a < Kli::kAliases; ++a)
    if (kli_.load32(Kli::kAliasTable + 4 * a) == ptask + 1) return a;
  return -1;
}

// ------------------------------------------------------------------ DMA

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

uint32_t MacFifo::put(std::vector<uint8_t>&& frame) {
  const uint32_t a = next_++;
  frames_[a] = std::move(frame);
  return a;
}

bool MacFifo::take(uint32_t addr, std::vector<uint8_t>* frame) {
  auto it = frames_.find(addr);
  if (it == frames_.end()) return false;
  *frame = std::move(it->second);
  frames_.erase(it);
  return true;
}

bool MacFifo::read(uint64_t addr, uint32_t, uint8_t* out, uint32_t n) {
  auto it = frames_.find(static_cast<uint32_t>(addr));
  if (it == frames_.end() || it->second.size() != n) return false;
  std::copy(it->second.begin(), it->second.end(), out);
  frames_.erase(it);
  return true;
}

bool MacFifo::write(uint64_t addr, uint32_t, const uint8_t* in, uint32_t n) {
  if (addr > 0xffffffffu || frames_.count(static_cast<uint32_t>(addr))) return false;
  frames_[static_cast<uint32_t>(addr)].assign(in, in + n);
  return true;
}

DmaEngine::DmaEngine(Calendar& cal, Em& em, uint32_t ring, double setup_ns, Stats& st, const std::string& n, const char* module)
    : Unit(n, module),
      cal_(cal),
      em_(em),
      ring_(ring),
      ring_off_(0),
      setup_ps_(static_cast<uint64_t>(std::llround(setup_ns * 1000))),
      descs_(st.counter(n + ".descriptors", "descriptors served")),
      bytes_(st.counter(n + ".bytes", "bytes moved")),
      busy_(st.counter(n + ".busy_ps", "time the engine was transferring")),
      ring_full_(st.counter(n + ".ring_full", "descriptors posted to a full ring (waited for the oldest)")),
      lost_(st.counter(n + ".lost", "descriptors overwritten before they completed (not handed to their owner)")),
      errors_(st.counter(n + ".errors", "descriptors naming an address a port does not have (nothing moved)")) {
  if (ring_ == 0) internal_error("a descriptor ring needs at least one entry");
  ring_off_ = em_.carve(ring_ * kDescBytes);
}

void DmaEngine::write_desc(uint32_t slot, uint64_t src, uint64_t dst, uint32_t bytes, uint32_t status, uint32_t ctx,
                           const std::vector<uint8_t>& src_bytes) {
  if (!src_bytes.empty()) em_.write(static_cast<uint32_t>(src), src_bytes.data(), static_cast<uint32_t>(src_bytes.size()));
  const uint32_t d = ring_off_ + slot * kDescBytes;
  em_.store32(d, static_cast<uint32_t>(src));
  em_.store32(d + 4, static_cast<uint32_t>(dst));
  em_.store32(d + 8, bytes);
  em_.store32(d + 12, status);
  em_.store32(d + 16, ctx);
}

DmaEngine::Desc DmaEngine::desc(uint32_t slot) const {
  const uint32_t d = ring_off_ + (slot % ring_) * kDescBytes;
  return Desc{em_.load32(d), em_.load32(d + 4), em_.load32(d + 8), em_.load32(d + 12), em_.load32(d + 16), slot % ring_};
}

uint32_t DmaEngine::post(uint64_t at, uint64_t src, uint64_t dst, uint32_t bytes, Xfer xfer, uint32_t ctx, uint32_t read_bytes, Move move,
                         std::vector<uint8_t> src_bytes) {
  const uint32_t number = posted_++;
  const uint32_t slot = number % ring_;
  const uint32_t status = kOwn | (move != Move::Owner ? kMove : 0) | (move == Move::Back ? kBack : 0) | (number & 0xffffff);
  // The slot is free once every descriptor a ring's length before this one is done.
  const bool room = q_.size() < ring_;
  if (!room) ring_full_.inc();
  descs_.inc();
  bytes_.inc(read_bytes == ~0u ? bytes : read_bytes);
  q_.push_back(Entry{number, at, Desc{static_cast<uint32_t>(src), static_cast<uint32_t>(dst), bytes, status, ctx, slot}, std::move(src_bytes),
                     std::move(xfer)});
  if (room) schedule_write(q_.back());
  return number;
}

// The producer writes the descriptor (and its bytes) at its time, or when its slot frees.
void DmaEngine::schedule_write(Entry& e) {
  if (e.at <= cal_.now_ps()) return written(e);
  cal_.at(e.at, [this, number = e.number, epoch = epoch_] {
    // (not written, so not started: still in the queue, whose numbers run on from the front's)
    if (epoch == epoch_) written(q_[number - q_.front().number]);
  });
}

void DmaEngine::written(Entry& e) {
  write_desc(e.posted.slot, e.posted.src, e.posted.dst, e.posted.bytes, e.posted.status, e.posted.ctx, e.src_bytes);
  e.written = true;
  std::vector<uint8_t>().swap(e.src_bytes);
  try_start();
}

// One engine serves its descriptors in order: the front, once written, after the setup. It
// books the transfer then, for when the setup is over (a setup ahead, no more).
void DmaEngine::try_start() {
  if (running_ || q_.empty() || !q_.front().written) return;
  running_ = true;
  begin(cal_.now_ps() + setup_ps_);
}

void DmaEngine::begin(uint64_t s) {
  Entry& e = q_.front();
  e.start = s;
  e.finish = e.xfer(s);
  Xfer().swap(e.xfer);  // (what it captured is not needed any more)
  arm();
}

// The transfer is over when the last of its bookings is; a booking made since may have delayed
// it, so the engine looks again when the end it was told comes.
void DmaEngine::arm() {
  const Entry& e = q_.front();
  cal_.at(std::max(e.start, e.finish.end()), [this, epoch = epoch_] {
    if (epoch != epoch_) return;
    if (q_.front().finish.end() > cal_.now_ps()) return arm();
    complete();
  });
}

void DmaEngine::complete() {
  if (q_.empty() || !running_) internal_error(std::string(name()) + ": a descriptor completed that was not started");
  Entry f = std::move(q_.front());
  q_.pop_front();
  running_ = false;
  busy_.inc(cal_.now_ps() - f.start);
  const uint32_t slot = f.posted.slot;
  // The engine works from the descriptor as it is in EM.
  Desc d = desc(slot);
  if (mutant::on(mutant::Id::DmaMovesPosted)) d = Desc{f.posted.src, f.posted.dst, f.posted.bytes, d.status, f.posted.ctx, slot};
  const bool lost = !(d.status & kOwn) || d.number() != (f.number & 0xffffff);
  if (lost) {
    lost_.inc();
  } else {
    uint32_t status = kDone | (d.status & (kMove | kBack)) | d.number();
    if (src_ && dst_ && d.move() && d.bytes) {
      staging_.resize(d.bytes);
      DmaPort* from = d.back() ? dst_ : src_;
      DmaPort* to = d.back() ? src_ : dst_;
      if (!from->read(d.src, d.ctx, staging_.data(), d.bytes) || !to->write(d.dst, d.ctx, staging_.data(), d.bytes)) {
        status |= kError;
        errors_.inc();
      }
    }
    // It hands the descriptor back in the ring.
    em_.store32(ring_off_ + slot * kDescBytes + 12, status);
    if (at_completion_) at_completion_(desc(slot));
  }
  // Its ring's interrupt: the firmware collects the entry (its slot still holds it).
  ++handed_;
  const uint64_t epoch = epoch_;
  if (irq_) irq_();
  if (epoch != epoch_) return;  // the firmware's routine reset the engine (a power loss)
  // The slot is free: a descriptor that waited for it is written.
  if (q_.size() >= ring_ && !q_[ring_ - 1].written) schedule_write(q_[ring_ - 1]);
  try_start();
}

void DmaEngine::reset() {
  ++epoch_;
  // The engine stops: the next descriptor waits for no transfer from before.
  q_.clear();
  running_ = false;
  handed_ = posted_;  // it is through with them all
}

FirmwareRing::FirmwareRing(Calendar& cal, DmaEngine& engine) : cal_(cal), e_(engine), collected_(engine.posted()) {
  e_.set_interrupt([this] { collect(); });
}

uint32_t FirmwareRing::post(uint64_t at, uint64_t src, uint64_t dst, uint32_t bytes, DmaEngine::Xfer xfer, DmaEngine::Done done, uint32_t ctx,
                            uint32_t read_bytes, DmaEngine::Move move, std::vector<uint8_t> src_bytes) {
  const uint32_t n = e_.post(at, src, dst, bytes, std::move(xfer), ctx, read_bytes, move, std::move(src_bytes));
  expect(n, std::move(done));
  return n;
}

void FirmwareRing::expect(uint32_t number, DmaEngine::Done done) {
  if (!done) return;
  if (finished(number) || (!table_.empty() && static_cast<int32_t>(number - table_.back().first) <= 0))
    internal_error(std::string(e_.name()) + ": a routine noted for a descriptor out of order or already collected");
  table_.emplace_back(number, std::move(done));
}

void FirmwareRing::collect() {
  const uint64_t epoch = epoch_;
  while (collected_ != e_.handed()) {
    const uint32_t n = collected_++;
    // The entry as the ring holds it: handed back, or lost (not done, or another number).
    const DmaEngine::Desc d = e_.desc(n % e_.ring());
    DmaEngine::Done fn;
    while (!table_.empty() && static_cast<int32_t>(table_.front().first - n) <= 0) {
      if (table_.front().first == n) fn = std::move(table_.front().second);
      table_.pop_front();
    }
    if (fn && d.done() && d.number() == (n & 0xffffff)) {
      fn(d);
      if (epoch != epoch_) return;  // the routine reset the ring (a power loss)
    }
    if (!waiters_.empty()) {
      std::vector<std::function<void()>> ready;
      for (size_t i = 0; i < waiters_.size();)
        if (finished(waiters_[i].first)) {
          ready.push_back(std::move(waiters_[i].second));
          waiters_.erase(waiters_.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
          ++i;
        }
      for (auto& w : ready) {
        w();
        if (epoch != epoch_) return;
      }
    }
  }
}

void FirmwareRing::when_done(uint32_t number, std::function<void()> fn) {
  if (finished(number)) return fn();
  waiters_.emplace_back(number, std::move(fn));
}

void FirmwareRing::reset() {
  ++epoch_;
  e_.reset();
  collected_ = e_.handed();
  table_.clear();
  // Whoever waited for a descriptor from before hears it will not complete.
  for (auto& w : waiters_) cal_.after(0, std::move(w.second));
  waiters_.clear();
}

// ------------------------------------------------------------------ CAU, MEAC1024

const char* Cau::to_string(Error e) {
  switch (e) {
    case Error::None: return "none";
    case Error::Truncated: return "truncated";
    case Error::BadLength: return "bad length";
    case Error::BadIcv: return "authentication failed";
    case Error::BadPadding: return "bad padding";
    case Error::BadKey: return "no usable key in the slot";
    case Error::BadRequest: return "a descriptor the CAU cannot serve";
  }
  return "?";
}

Cau::Error Cau::verdict(const DmaEngine::Desc& d) {
  if (!d.error()) return Error::None;
  const uint32_t v = d.status >> 24 & 7;
  return v ? static_cast<Error>(v) : Error::BadRequest;
}

Cau::Error Cau::apply(const SecurityAssociation& sa, Op op, std::vector<uint8_t>& f) {
  if (op == Op::Seal) return sa.seal_in_place(f, kMaxFrame) ? Error::None : Error::BadLength;
  switch (sa.open(f)) {
    case OpenError::None: return Error::None;
    case OpenError::Truncated: return Error::Truncated;
    case OpenError::BadLength: return Error::BadLength;
    case OpenError::BadIcv: return Error::BadIcv;
    case OpenError::BadPadding: return Error::BadPadding;
  }
  return Error::BadRequest;
}

uint64_t Cau::em_bytes(uint32_t ring, uint32_t key_slots) {
  return static_cast<uint64_t>(ring) * DmaEngine::kDescBytes + static_cast<uint64_t>(key_slots + ring) * SecurityAssociation::kKeyBlockBytes;
}

Cau::Cau(Calendar& cal, const CryptoConfig& c, uint32_t ring, uint32_t key_slots, Em& em, Stats& st, const std::string& n)
    : Unit(n),
      c_(c),
      em_(em),
      port_(em),
      dma_(cal, em, ring, c.cau_setup_ns, st, n, "cau_dma"),
      slots_(key_slots),
      keys_off_(em.carve(key_slots * SecurityAssociation::kKeyBlockBytes)),
      staging_off_(em.carve(ring * SecurityAssociation::kKeyBlockBytes)),
      schedules_(key_slots),
      transforms_(st.counter(n + ".transforms", "frames sealed or opened")),
      failures_(st.counter(n + ".failures", "transforms refused: a frame that did not authenticate or decode, a key slot without a usable key block")),
      key_loads_(st.counter(n + ".key_loads", "key blocks loaded into key slots through the ring")) {
  dma_.connect(&port_, &port_);  // key loads: EM to EM
  // A transform's descriptor (a key load's is a move) is carried out at its completion.
  dma_.set_completion([this](const DmaEngine::Desc& d) {
    if (!d.move()) transform(d);
  });
}

uint64_t Cau::compute_ps(uint32_t cb, uint32_t hb) const {
  return std::max(ps_of(cb * c_.des_cycles_per_block, c_.cau_clock_mhz), ps_of(hb * c_.hash_cycles_per_block, c_.cau_clock_mhz));
}

void Cau::load_key(uint64_t at, uint32_t slot, std::vector<uint8_t> block) {
  if (slot >= slots_ || block.size() != SecurityAssociation::kKeyBlockBytes) internal_error(std::string(name()) + ": a key load for a slot it does not have");
  key_loads_.inc();
  constexpr uint32_t b = SecurityAssociation::kKeyBlockBytes;
  const uint32_t staging = staging_off_ + dma_.next_slot() * b;  // written with the descriptor
  dma_.post(at, staging, key_slot_offset(slot), b, [this](uint64_t s) { return Finish(s, em_.access(Route::Crypto, s, 2 * b)); },
            DmaEngine::kNoContext, ~0u, DmaEngine::Move::Forward, std::move(block));
}

uint32_t Cau::run(uint64_t at, Op op, uint32_t slot, uint32_t off, uint32_t bytes, uint32_t out, uint32_t cb, uint32_t hb) {
  const uint32_t key = slot == last_slot_ ? 0 : SecurityAssociation::kKeyBlockBytes;
  last_slot_ = slot;
  return dma_.post(at, off, off, bytes, [this, bytes, out, key, cb, hb](uint64_t s) {
    // Its DMA reads the frame (and a key block for a slot other than the last) and writes the
    // result over the crypto route, while it computes.
    // Its DMA streams through EM at the cipher's pace, not faster.
    const uint64_t compute = compute_ps(cb, hb);
    return Finish(s + compute, em_.access(Route::Crypto, s, bytes + out + key, compute));
  }, static_cast<uint32_t>(op) << 24 | slot);
}

void Cau::transform(const DmaEngine::Desc& desc) {
  DmaEngine::Desc d = desc;
  transforms_.inc();
  const Op op = static_cast<Op>(d.ctx >> 24);
  const uint32_t slot = d.ctx & 0xffffff;
  Error e = Error::None;
  std::vector<uint8_t> f;
  if ((op != Op::Seal && op != Op::Open) || slot >= slots_ || d.src != d.dst || d.bytes > kMaxFrame) {
    e = Error::BadRequest;
  } else {
    // The key block as EM holds it now; its schedule is recomputed only when it changed.
    Schedule& k = schedules_[slot];
    std::array<uint8_t, SecurityAssociation::kKeyBlockBytes> block;
    em_.read_into(key_slot_offset(slot), block.data(), SecurityAssociation::kKeyBlockBytes);
    if (!k.sa_made || block != k.block) {
      k.sa = SecurityAssociation::from_key_block(block.data(), SecurityAssociation::kKeyBlockBytes);
      k.block = block;
      k.sa_made = true;
    }
    f.resize(d.bytes);
    if (!k.sa) e = Error::BadKey;
    else if (!port_.read(d.src, 0, f.data(), d.bytes)) e = Error::BadRequest;
    else e = apply(*k.sa, op, f);
  }
  const uint32_t at = dma_.ring_offset() + d.slot * DmaEngine::kDescBytes;
  if (e == Error::None) {
    port_.write(d.dst, 0, f.data(), static_cast<uint32_t>(f.size()));
    d.bytes = static_cast<uint32_t>(f.size());
  } else {
    failures_.inc();
    d.status |= DmaEngine::kError | static_cast<uint32_t>(e) << 24;
  }
  em_.store32(at + 8, d.bytes);
  em_.store32(at + 12, d.status);
}

Meac::Meac(const CryptoConfig& c, Stats& st, const std::string& n)
    : Unit(n),
      c_(c),
      ops_(st.counter(n + ".modmuls", "1024-bit modular multiplications and reductions")),
      busy_(st.counter(n + ".busy_ps", "time the MEAC1024 computed")) {}

uint64_t Meac::modmul_ps() const { return ps_of(c_.meac_modmul_cycles, c_.meac_clock_mhz); }

uint64_t Meac::run(uint64_t at, uint32_t n) {
  const uint64_t start = std::max(at, free_);
  const uint64_t dur = n * modmul_ps();
  free_ = start + dur;
  ops_.inc(n);
  busy_.inc(dur);
  return free_;
}

// ------------------------------------------------------------------ frame buffers

FramePool::FramePool(Em& em, uint32_t count, Stats& st, const std::string& n)
    : Unit(n),
      em_(em),
      base_(em.carve(count * kBufBytes)),
      owner_(count, 0),
      allocs_(st.counter(n + ".allocated", "frames given a buffer in EM")),
      exhausted_(st.counter(n + ".exhausted", "frames that found every buffer taken")),
      high_(st.counter(n + ".high_water", "most buffers taken at once")) {
  if (count == 0) internal_error("a frame pool needs at least one buffer");
}

bool FramePool::alloc(Buf* b) {
  for (uint32_t i = 0; i < owner_.size(); ++i)
    if (owner_[i] == 0) {
      owner_[i] = ++serial_;
      ++in_use_;
      if (in_use_ > high_.value) high_.value = in_use_;
      allocs_.inc();
      *b = Buf{static_cast<int32_t>(i), serial_, 0};
      return true;
    }
  exhausted_.inc();
  return false;
}

void FramePool::release(const Buf& b) {
  if (!live(b)) {
    if (b.valid() && b.serial > reset_at_) internal_error("a frame buffer in EM released twice");
    return;  // taken before a power loss emptied EM
  }
  owner_[b.idx] = 0;
  --in_use_;
}

void FramePool::put(Buf& b, const std::vector<uint8_t>& f) {
  if (!live(b)) internal_error("a frame written into an EM buffer it does not own");
  if (f.size() > kBufBytes) internal_error("a frame of " + std::to_string(f.size()) + " bytes for an EM buffer of " + std::to_string(kBufBytes));
  em_.write(offset(b), f.data(), static_cast<uint32_t>(f.size()));
  b.len = static_cast<uint32_t>(f.size());
}

std::vector<uint8_t> FramePool::get(const Buf& b) const {
  if (!live(b)) internal_error("a frame read from an EM buffer it does not own");
  return em_.read(offset(b), b.len);
}

void FramePool::reset() {
  owner_.assign(owner_.size(), 0);
  in_use_ = 0;
  reset_at_ = serial_;
}

// ------------------------------------------------------------------ CSU, OCU

Csu::Csu(Stats& st, const std::string& name)
    : Unit(name),
      tx_(st.counter(name + ".tx", "checksums computed on packet images written by the PGE (CSU-T)")),
      rx_(st.counter(name + ".rx", "checksums verified on frames written by the LDMA (CSU-R)")),
      bad_(st.counter(name + ".bad", "received frames whose TCP/UDP checksum failed")),
      bytes_(st.counter(name + ".bytes", "bytes summed, both parts")) {}

uint16_t Csu::transmit(const std::vector<uint8_t>& f) {
  tx_.inc();
  bytes_.inc(f.size());
  return l4_checksum(f);
}

void Csu::fragment(const std::vector<uint8_t>& f) { bytes_.inc(f.size()); }

bool Csu::joined(const std::vector<uint8_t>& whole) {
  rx_.inc();
  const bool ok = l4_verifies(whole);
  if (!ok) bad_.inc();
  return ok;
}

bool Csu::receive(const std::vector<uint8_t>& f) {
  rx_.inc();
  bytes_.inc(f.size());
  const bool ok = l4_verifies(f);
  if (!ok) bad_.inc();
  return ok;
}

Ocu::Ocu(uint32_t registers, Stats& st, const std::string& name)
    : Unit(name),
      next_(registers, 0),
      in_order_(st.counter(name + ".in_order", "segments found in order")),
      dups_(st.counter(name + ".duplicates", "segments found entirely before the expected sequence number")),
      gaps_(st.counter(name + ".gaps", "segments found beyond the expected sequence number (one before them is missing)")) {}

void Ocu::arm(uint32_t reg, uint32_t next) { next_.at(reg) = next; }

Ocu::Order Ocu::check_end_p(uint32_t reg, uint8_t end_p) {
  const uint8_t e = static_cast<uint8_t>(end_p - next_.at(reg));
  if (e == 0) {
    in_order_.inc();
    return Order::InOrder;
  }
  if (e >= 127) {
    dups_.inc();
    return Order::Duplicate;
  }
  gaps_.inc();
  return Order::Gap;
}

Ocu::Order Ocu::check(uint32_t reg, uint32_t seq) {
  const int32_t d = static_cast<int32_t>(seq - next_.at(reg));
  if (d == 0) {
    in_order_.inc();
    return Order::InOrder;
  }
  if (d < 0) {
    dups_.inc();
    return Order::Duplicate;
  }
  gaps_.inc();
  return Order::Gap;
}

}  // namespace mbpsim::mbp2
