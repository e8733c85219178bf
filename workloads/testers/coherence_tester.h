// The value-checking coherence tester, in the style of gem5's RubyTester. Each check owns one
// block: random processors on random nodes write different fields of it (store, then fence),
// or several processors apply atomics to one word; when all have finished, a random processor
// reads the whole block and compares it with what the writes imply; loads racing the writes
// must see each byte either old or new. Pages of every protocol
// and directory format are mixed, and random pages switch protocol during the run. Failures
// print the seed; the same seed replays the same run.
#pragma once
#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "workloads/mbp_workload.h"

namespace mbpsim {

class CoherenceTester : public MbpWorkload {
 public:
  CoherenceTester(const Config& c, net::Network& net, Stats& stats, uint64_t seed);
  // The tested region, shared by every processor (the memory forecast's input).
  static AddressUse address_use(const Config& c);
  void start() override;
  bool done() const override { return completed_ == checks_ && switches_in_flight_ == 0; }
  nlohmann::ordered_json summary() const override;
  std::string check_failed() const override {
    return failures_ ? std::to_string(failures_) + " coherence checks failed (the first ones are printed above)" : "";
  }
  bool next(uint32_t node, uint32_t proc, node::MemOp& op) override;
  void complete(uint32_t node, uint32_t proc, const node::MemOp& op, uint64_t now_ps) override;

 private:
  enum class Kind { Store, FetchAdd, FetchAddVec, Swap, CompSwap };
  struct Check {
    uint64_t id = 0, nblk = 0;
    Kind kind = Kind::Store;
    uint32_t pending = 0, woff = 0, width = 8, count = 1, k = 0;
    std::vector<uint8_t> before, expect;  // block contents before and (stores) after
    std::vector<uint64_t> values, olds;   // atomics: operands and returned old values
  };
  void new_check();
  void push(uint32_t proc_index, const node::MemOp& op);
  void verify(Check& ch, const uint8_t* got);
  void failure(const Check& ch, const std::string& what);
  uint32_t pick_proc() { return static_cast<uint32_t>(rng_.below(nodes_ * procs_)); }

  uint64_t checks_, active_, pages_, switch_every_, max_gap_;
  double atomic_frac_;
  uint32_t block_;
  uint64_t seed_;
  Rng rng_;
  std::vector<std::deque<node::MemOp>> q_;
  std::map<uint64_t, Check> live_;
  std::unordered_set<uint64_t> busy_blocks_;
  std::unordered_map<uint64_t, std::vector<uint8_t>> known_;
  uint64_t started_ = 0, completed_ = 0, failures_ = 0, next_id_ = 1;
  uint64_t racing_loads_ = 0, store_checks_ = 0, atomic_checks_ = 0, switches_sent_ = 0, switches_in_flight_ = 0;
};

void declare_tester_params(ParamSchema& s);

}  // namespace mbpsim
