// The PME: the protocol management engine, its cycles per instruction from its memory system,
// its interrupts and handler scheduling (8.2, 8.3.4-8.3.5, 8.5).
#pragma once
#include "models/mbp2/em.h"

namespace mbpsim::mbp2 {

// The embedded protocol processor. Its cycles per instruction come from its memory system
// (8.5: "lack of a secondary cache, write-through policy of its cache, very small amount of
// instruction cache"): instruction-cache misses fill a line over the processor bus, loads and
// stores to the descriptor rings and packet headers in EM are uncached (8.3.4) unless the
// core has explicit fill and write-back instructions, and write-through stores stall when the
// write buffer is full.
struct PmeConfig {
  // Every member is a parameter of `params()` (mbp2_params.cpp), which gives it its default.
  PmeConfig();
  double clock_mhz{};   // MBP2P: SPARClite MB86832 internal clock
  double bus_mhz{};      // SPARClite bus
  double base_cpi{};    // scalar integer pipeline, everything hitting
  double imiss_per_instr{};
  double line_fill_bus_cycles{};
  double shared_per_instr{};    // loads and stores to EM-resident rings and headers
  double shared_bus_cycles{};    // one uncached EM access through the controller
  bool cache_control{};       // explicit cache-fill / write-back instructions (Casablanca)
  double store_per_instr{};
  double wt_stall_bus_cycles{};   // average write-buffer stall per store (write-through)
  // Interrupts: conventional (trap, save and restore of a register window and globals) or
  // zero-cost register-set switching (Casablanca, 8.3.5).
  bool register_sets{};
  double interrupt_instr{};
  double host_cpi{};  // the SS20 kernel's cycles per instruction, to port the host's routines
  static const ParamTable<PmeConfig>& params();
};

class Pme : public Unit {
 public:
  enum Priority : int { kHigh = 0, kNormal = 1, kLow = 2 };
  // The interrupt lines of the units' descriptor rings (`run_from`).
  // kNoSource: a run the PME's own work starts, with no interrupt.
  enum Source : int { kNoSource = -1, kPgeRing = 0, kLdmaTxRing, kLdmaRxRing, kCauRing };
  // A cache line: four 32-bit words. With cache-control instructions one line fill (or write
  // back) stands for four uncached word accesses to the shared areas.
  static constexpr uint32_t kLineWords = 4;
  Pme(Calendar& cal, const PmeConfig& c, Stats& st, const std::string& name);
  double cpi() const;
  const std::string& track_name() const { return name_; }  // its track on a timeline
  uint64_t instr_ps(double instructions) const;
  // The same routine ported from the host kernel: its host cycles as PME time.
  uint64_t host_cycles_ps(double host_cycles) const { return instr_ps(host_cycles / c_.host_cpi); }
  // A compute kernel (firmware crypto, modular arithmetic) whose loop and tables stay in the
  // caches: the base CPI and write-through stalls, plus `shared_words` word accesses to
  // buffers shared with the DMAs (uncached, or filled by line with cache-control instructions).
  uint64_t kernel_ps(double instructions, double shared_words) const;
  uint64_t interrupt_ps() const { return c_.register_sets ? 0 : instr_ps(c_.interrupt_instr); }
  // The card memory its uncached loads and stores reach (the PME route). Attached, a handler
  // books the accesses its run makes there (`em_accesses`), paced over the run, and ends no
  // earlier than they do: a memory saturated by the other routes slows the PME.
  void attach(Em* em) { em_ = em; }
  // The EM accesses a run of `dur` makes by the CPI model's mix: `shared_per_instr` uncached
  // words per instruction, or a line fill for four of them with cache-control instructions.
  double em_accesses(uint64_t dur) const;
  // Runs a handler for `dur` (plus the interrupt cost if `interrupt`), then `fn`. Handlers run
  // one at a time to completion; waiting ones are taken by priority, then arrival. `hold`,
  // when given, is called after `dur` with the handler's continuation: the handler keeps the
  // PME (it polls a unit's completion) until `hold` calls it, once; that time is its own.
  using Hold = std::function<void(std::function<void()> resume)>;
  void run(const char* handler, Priority pr, bool interrupt, uint64_t dur, std::function<void()> fn, Hold hold = {});
  // A unit's completion, raised on its interrupt `source` (its descriptor ring, 8.3.4-8.3.5:
  // "on completion of DMA processing, the PME must collect the used entry"). The handler loops
  // over its ring before it returns: when the next run (by priority, then arrival) is a
  // completion of the same ring, it is collected in the same interrupt, with no new entry.
  // What a handler starts for later in its own run continues it (the same source).
  // kNoSource: `run` with no interrupt.
  void run_from(int source, const char* handler, Priority pr, uint64_t dur, std::function<void()> fn, Hold hold = {});
  uint64_t busy_ps() const { return busy_.value; }
  uint64_t interrupts() const { return interrupts_.value; }
  uint64_t coalesced() const { return coalesced_.value; }
  bool idle() const { return !running_ && q_.empty(); }

 private:
  struct Job {
    int pr;
    uint64_t seq;
    const char* handler;
    bool interrupt;
    int source;  // the ring whose completion raised it (-1: none)
    uint64_t dur;
    std::function<void()> fn;
    Hold hold;
    bool operator>(const Job& o) const { return pr != o.pr ? pr > o.pr : seq > o.seq; }
  };
  void push(Job j);
  void next();
  void end_run(const std::function<void()>& fn);  // the run's continuation, then the next run
  // Runs `k` once the run's EM accesses are over (at once when they already are).
  void wait_mem(FairShare::Booking mem, Counter* handler, std::function<void()> k);
  Calendar& cal_;
  Em* em_ = nullptr;
  PmeConfig c_;
  Stats& st_;
  std::string name_;
  std::priority_queue<Job, std::vector<Job>, std::greater<Job>> q_;  // by priority, then arrival
  bool running_ = false;
  uint64_t seq_ = 0;
  int in_source_ = -1;  // the ring whose handler the last run was (-1: none, or the PME went idle)
  bool in_fn_ = false;  // a run's continuation is running
  Counter &busy_, &interrupts_, &int_ps_, &mem_stall_, &coalesced_;
  std::map<std::string, Counter*> per_handler_;
};

}  // namespace mbpsim::mbp2
