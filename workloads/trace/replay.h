// Trace replay on the MBP machine (`workload.kind = trace`): each thread of a trace
// (traces/FORMAT.md) runs on one processor; its memory records become loads, stores and
// atomics, and its synchronisation runs through the machine's own memory and coherence:
//   lock       trace.sync simulated (the default): a compare&swap of 0 -> 1 at the lock's
//              home; whoever's reaches the home first holds it, the others spin on their
//              cached copy (asleep: no traffic) and try again when a release completes;
//              release is a fence then a swap back to 0. trace.sync recorded: granted in the
//              captured acquisition order (word = 2 x turn + held): the next acquirer tries
//              once its predecessor's release has completed;
//   barrier    fetch&add on the barrier's counter word; the last arriver swaps the episode word
//              (the next 8 bytes); the others load it until it moves past their episode;
//   semaphore  post = fetch&add +1; wait = after its post, fetch&add -1;
//   condition  signal/broadcast = fetch&add +1 on the condition's word; a wait loads it after
//              the wake-up that woke it;
//   create     wakes the child's processor; join sleeps until the child has drained its
//              stores (a fence) and ended.
// Streams are read one record at a time.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "workloads/mbp_workload.h"
#include "workloads/trace/trace.h"

namespace mbpsim {

class TraceReplay : public MbpWorkload {
 public:
  TraceReplay(const Config& c, net::Network& net, Stats& stats, uint64_t seed);
  // The trace folder `trace.path` names (a relative path is relative to the config file).
  static std::string trace_dir(const Config& c);
  // Adds the host memory the replay's streams hold to `f`; the addresses the trace touches.
  static AddressUse footprint(const Config& c, MemoryForecast& f);
  bool done() const override { return ended_ == th_.size(); }
  std::string unfinished() const override {
    return std::to_string(th_.size() - ended_) + " of " + std::to_string(th_.size()) + " threads not ended";
  }
  nlohmann::ordered_json summary() const override;
  bool next(uint32_t node, uint32_t proc, node::MemOp& op) override;
  void complete(uint32_t node, uint32_t proc, const node::MemOp& op, uint64_t now_ps) override;
  std::string stalled() const override;
  std::string progress(double wall_s) const override;
  double done_fraction() const override { return total_records_ ? static_cast<double>(records_) / total_records_ : -1; }
  std::string input_error() const override { return input_error_; }
  std::vector<std::string> warnings() const override { return warning_.empty() ? std::vector<std::string>{} : std::vector<std::string>{warning_}; }

 private:
  enum class State : uint8_t { NotCreated, Running, Sleeping, Ended };
  enum class Role : uint8_t { Memory, Sync };
  struct Thread {
    std::unique_ptr<trace::StreamReader> in;
    uint32_t node = 0, proc = 0;
    State st = State::NotCreated;
    trace::Record rec;
    bool have_rec = false;
    uint64_t off = 0;        // bytes of the current memory record already issued
    uint8_t phase = 0;       // step of the current synchronisation record
    uint64_t carry_gap = 0;  // gaps of records that issue no operation
    Role role = Role::Memory;
    // accounting (ps)
    uint64_t last_t = 0, busy = 0, sync = 0, stall[5] = {};
    uint64_t refs = 0, end_ps = 0;
    uint64_t attempts = 0;  // compare&swaps of the current acquisition
    uint64_t barrier_base = 0;  // the counter's value when the current barrier episode began
    uint64_t releases_seen = 0;  // simulated locks: the lock's releases when this try was issued
    std::unordered_map<uint64_t, uint64_t> held;  // lock word -> the acquisition order it holds
    uint64_t passed = 0;  // records passed, deps not counted (what another thread's dep names)
    std::vector<std::pair<uint64_t, uint32_t>> dep_waiters;  // (record #, thread) waiting for it
  };
  // What the driver has seen complete. Responses of different threads may arrive in another
  // order than the home performed them, so the lock and barrier words themselves, not this
  // bookkeeping, decide who wins; the bookkeeping only decides who tries and who sleeps.
  struct Lock {
    uint64_t turn = 0;  // recorded: releases completed, so acquisition `turn` may try
    uint64_t releases = 0;  // simulated: releases completed
    std::vector<uint32_t> waiters;
  };
  struct Barrier {
    uint64_t episode = 0, base = 0;  // base: counter value when the episode began
    std::vector<uint32_t> waiters;
  };
  struct Counted {
    uint64_t happened = 0;  // posts or wake-ups so far
    std::vector<uint32_t> waiters;
  };

  bool next_op(uint32_t node, uint32_t proc, node::MemOp& op);
  void complete_op(uint32_t node, uint32_t proc, const node::MemOp& op, uint64_t now_ps);
  bool fill(uint32_t t, node::MemOp& op);  // the thread's next operation, or false (it sleeps)
  void read_record(uint32_t t);
  void sleep(uint32_t t, std::vector<uint32_t>& list);
  void wake_all(std::vector<uint32_t>& list);
  void wake(uint32_t t);
  void advance(uint32_t t) {
    Thread& T = th_[t];
    T.have_rec = false;
    T.phase = 0;
    T.off = 0;
    if (T.rec.kind != trace::Kind::Dep) {
      ++T.passed;
      if (!T.dep_waiters.empty()) wake_deps(t);
    }
  }
  void wake_deps(uint32_t t);  // wakes the threads whose dep on t's records is now met
  [[noreturn]] void replay_error(uint32_t t, const std::string& what) const;
  // Each thread's processor (node x procs + proc) under trace.placement (and trace.map).
  std::vector<uint32_t> place(const Config& c, const std::string& placement, uint32_t threads) const;

  std::string path_;
  std::string input_error_;  // a stream turned out bad while replaying (trace.validate off)
  bool validated_ = true;    // trace.validate: a broken rule is then the simulator's fault
  uint32_t idle_nodes_ = 0;  // nodes with no thread on any of their processors
  std::string warning_;      // said after the run: nodes left without a thread
  trace::Meta meta_;
  std::vector<Thread> th_;
  std::vector<std::vector<uint32_t>> on_proc_;  // per processor (node * procs + proc): its threads
  std::vector<int32_t> current_;                // per processor: the thread it runs, -1 none
  uint64_t switch_cycles_ = 500, switches_ = 0;
  double baseline_s_ = 0;
  std::unordered_map<uint64_t, Lock> locks_;
  std::unordered_map<uint64_t, Barrier> barriers_;
  std::unordered_map<uint64_t, Counted> sems_, conds_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> joiners_;
  size_t ended_ = 0;
  uint64_t total_records_ = 0;  // from the validation (0: not validated)
  uint64_t records_ = 0, refs_ = 0, retries_ = 0, stale_reads_ = 0, dep_waits_ = 0;
  uint64_t roi_begin_ps_ = 0, roi_end_ps_ = 0;
  bool recorded_order_ = false;  // trace.sync recorded: locks in the captured order
  uint32_t block_ = 32;
  uint64_t cycle_ps_ = 5000;
  double cpi_ = 1;
};

void declare_trace_params(ParamSchema& s);

}  // namespace mbpsim
