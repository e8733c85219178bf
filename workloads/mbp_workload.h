// Workloads that drive the MBP system (models/mbp): they own the system, feed its processors
// through the ProcDriver interface and report a summary. Concrete drivers: the coherence
// random tester (testers/), the synthetic sharing pattern and the processor script below.
#pragma once
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "models/core/rng.h"
#include "models/mbp/system.h"
#include "workloads/workload.h"

namespace mbpsim {

class MbpWorkload : public Workload, public node::ProcDriver {
 public:
  MbpWorkload(const Config& c, net::Network& net, Stats& stats, uint64_t seed);
  net::NetClient* net_client() override { return sys_.get(); }
  Phases phases() const override { return {0, 1, max_cycles_}; }
  void start() override { sys_->start(); }
  std::string failure_dump() const override { return sys_->dump_outstanding(20); }
  std::string stalled() const override;
  std::string progress(double wall_s) const override;
  nlohmann::ordered_json host_figures(double wall_s) const override;
  uint64_t calendar_events() const override { return sys_->events(); }
  void on_packet(uint32_t, net::Packet&, uint64_t) override;
  mbp::System& system() { return *sys_; }

 protected:
  // The common part of the summary: simulated time and memory-system figures.
  nlohmann::ordered_json base_summary() const;
  net::Network& net_;
  Stats& stats_;
  std::unique_ptr<mbp::System> sys_;
  uint64_t max_cycles_;
  uint32_t nodes_, procs_;
  uint64_t last_complete_ps_ = 0;
};

// Synthetic sharing: each processor mixes references to a private working set with
// references to a shared region (reads, writes, atomics), with compute gaps between them.
class SharingWorkload : public MbpWorkload {
 public:
  SharingWorkload(const Config& c, net::Network& net, Stats& stats, uint64_t seed);
  // Each processor's private pages and the shared region (the memory forecast's input).
  static AddressUse address_use(const Config& c);
  bool done() const override { return finished_ == nodes_ * procs_; }
  double done_fraction() const override;
  std::string unfinished() const override {
    return std::to_string(nodes_ * procs_ - finished_) + " of " + std::to_string(nodes_ * procs_) + " processors still running";
  }
  nlohmann::ordered_json summary() const override;
  bool next(uint32_t node, uint32_t proc, node::MemOp& op) override;
  void complete(uint32_t node, uint32_t proc, const node::MemOp& op, uint64_t now_ps) override;

 private:
  // An op drawn ahead (the fields its kind reads).
  struct Drawn {
    uint64_t addr = 0, value = 0;
    uint32_t gap = 0;
    node::OpKind kind = node::OpKind::Load;
    bool valid = false;
  };
  void draw(uint32_t idx, uint64_t k, Drawn& a);
  uint64_t refs_per_proc_, private_bytes_, shared_bytes_, fence_every_;
  double shared_frac_, write_frac_, atomic_frac_;
  uint32_t gap_;
  std::vector<Rng> rng_;
  std::vector<uint64_t> issued_;
  // A processor's ops k ... k + kAheadOps - 1, op j in slot j % kAheadOps.
  std::vector<std::array<Drawn, node::MemOp::kAheadOps>> drawn_;
  uint32_t finished_ = 0;
  uint64_t shared_base_ = 0;
};

// A list of operations per processor, each issued no earlier than its time; loads record the
// value read. Used for the Figure 2.7/2.8 coherence flow and for hand-made experiments.
class MbpScript : public MbpWorkload {
 public:
  MbpScript(const Config& c, net::Network& net, Stats& stats, uint64_t seed);
  bool done() const override { return completed_ == steps_.size(); }
  std::string unfinished() const override {
    return std::to_string(steps_.size() - completed_) + " of " + std::to_string(steps_.size()) + " scripted operations not completed";
  }
  nlohmann::ordered_json summary() const override;
  bool next(uint32_t node, uint32_t proc, node::MemOp& op) override;
  void complete(uint32_t node, uint32_t proc, const node::MemOp& op, uint64_t now_ps) override;

 private:
  struct Step {
    uint64_t at_ps;
    node::MemOp op;
    uint64_t result = 0;
    uint64_t done_ps = 0;
  };
  std::vector<Step> steps_;
  std::vector<std::vector<size_t>> queue_;  // per processor: step indices in order
  std::vector<size_t> pos_;
  size_t completed_ = 0;
};

void declare_mbp_workload_params(ParamSchema& s);

}  // namespace mbpsim
