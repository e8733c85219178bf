// The memory-model litmus tester (`workload.kind litmus`): runs each litmus test of
// litmus_model.h many times on the MBP system, on invalidate, update and non-cacheable pages
// (or a random protocol per location), with varied timing: threads on random processors of
// random nodes, random start skews and gaps, locations in random blocks of random homes,
// copies pre-loaded into random caches, and processors outside the test loading and storing
// their own words meanwhile (queueing). Every observed outcome is checked against the
// outcomes the documented memory model allows (an exhaustive enumeration, not a list written by
// hand); a forbidden one is a failure that prints the seed and the run. The summary reports,
// per test and protocol, the outcome histogram and which allowed relaxed (non-SC) outcomes were
// observed and which were not.
#pragma once
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "workloads/mbp_workload.h"
#include "workloads/testers/litmus_model.h"

namespace mbpsim {

class LitmusTester : public MbpWorkload {
 public:
  LitmusTester(const Config& c, net::Network& net, Stats& stats, uint64_t seed);
  // The locations' pages of the three protocols and the noise region, shared (the memory
  // forecast's input).
  static AddressUse address_use(const Config& c);
  void start() override;
  bool done() const override { return finished_ == total_; }
  nlohmann::ordered_json summary() const override;
  std::string check_failed() const override;
  bool next(uint32_t node, uint32_t proc, node::MemOp& op) override;
  void complete(uint32_t node, uint32_t proc, const node::MemOp& op, uint64_t now_ps) override;

 private:
  enum class Phase { Setup, Init, Warm, Threads, Finals };
  struct Cell {  // one test on one protocol setting
    const litmus::Test* test;
    int proto;  // a node::Protocol, or mixed (a protocol drawn per location and run)
    uint64_t runs = 0, forbidden = 0;
    std::map<litmus::Outcome, uint64_t> seen;
    std::set<litmus::Outcome> relaxed;  // allowed and not SC (fixed protocols only)
  };
  void begin_run();
  void enter(Phase ph);
  void finish_run();
  void push(uint32_t proc_index, node::MemOp op, uint64_t max_gap);
  const std::set<litmus::Outcome>& allowed(const litmus::Test& t, const std::vector<node::Protocol>& protos);
  uint64_t block_addr(node::Protocol p);
  std::string describe_run() const;

  std::vector<Cell> cells_;
  uint64_t runs_per_cell_, total_, pages_, max_skew_, max_gap_, seed_;
  double warm_fraction_;
  uint32_t noise_;
  std::set<uint32_t> noise_procs_;
  bool noise_active_ = false;
  uint64_t noise_ops_ = 0;
  uint32_t page_bytes_, block_;
  Rng rng_;
  std::vector<std::deque<node::MemOp>> q_;
  std::map<std::pair<std::string, std::vector<node::Protocol>>, std::set<litmus::Outcome>> allowed_cache_;

  // The run in progress.
  Phase phase_ = Phase::Setup;
  uint64_t run_ = 0, finished_ = 0, pending_ = 0, failures_ = 0, unknown_values_ = 0;
  Cell* cell_ = nullptr;
  std::vector<node::Protocol> protos_;
  std::vector<uint64_t> addr_;
  std::vector<uint32_t> placement_;
  litmus::Outcome regs_;
  std::string first_failure_;
};

void declare_litmus_params(ParamSchema& s);

}  // namespace mbpsim
