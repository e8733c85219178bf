#include "models/mbp2/pme.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"
#include "models/core/timeline.h"

namespace mbpsim::mbp2 {

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
  if (Timeline* tl = timeline())  // the handler's run on the PME (its interrupt entry included)
    tl->slice(tl->track(name_), j.handler, cal_.now_ps(), cal_.now_ps() + dur,
              std::string("{\"interrupt\":") + (j.interrupt && !same_handler ? "true" : "false") + "}");
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

}  // namespace mbpsim::mbp2
