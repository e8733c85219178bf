// Builds an MBP system in the test process (one elaboration per process) and gives tests
// white-box access through mbp::SystemTestPeer.
#pragma once
#include <functional>
#include <memory>

#include <gtest/gtest.h>
#include <systemc>

#include "models/core/module_tree.h"
#include "models/mbp/system.h"
#include "models/mbp/system_internal.h"
#include "models/net/network.h"
#include "sim/runner.h"
#include "workloads/mbp_workload.h"

namespace mbpsim {
namespace mbp {

struct SystemTestPeer {
  static System::Frame* frame(System& s, uint32_t node, uint64_t addr) {
    return s.frame_for(node, addr / s.nc_.page_bytes, false);
  }
  // The byte of `addr` in node's frame (home memory or L3 copy), in the bank that holds it.
  static uint8_t& byte(System& s, uint32_t node, uint64_t addr) {
    System::Frame* f = frame(s, node, addr);
    const uint32_t off = static_cast<uint32_t>(addr % s.nc_.page_bytes);
    return s.mem(f, off / s.nc_.block_bytes)[off % s.nc_.block_bytes];
  }
  static uint8_t state(System& s, uint32_t node, uint64_t addr) {
    System::Frame* f = frame(s, node, addr);
    return f ? f->st[(addr % s.nc_.page_bytes) / s.nc_.block_bytes] : 0xff;
  }
  // Sends a message of type t about `addr` from node src to node dst, now.
  static void inject(System& s, MsgType t, uint32_t src, uint32_t dst, uint64_t addr) {
    Msg* m = s.new_msg(t, src, dst);
    m->nblk = addr / s.nc_.block_bytes;
    m->requester = src;
    s.send(m, s.now_ps());
  }
  // The home controller moves a block of `addr` at node `home` as transition (st, ev) leading to `to`.
  static void home_to(System& s, uint32_t home, uint64_t addr, HState st, HEvent ev, HState to) {
    s.home_to(frame(s, home, addr), static_cast<uint32_t>((addr % s.nc_.page_bytes) / s.nc_.block_bytes), st, ev, to);
  }
};

}  // namespace mbp

namespace test {

class MbpHarness {
 public:
  explicit MbpHarness(const nlohmann::json& cfg, uint64_t seed = 1)
      : MbpHarness(Config::from_json(schema(), cfg, "test.json"), seed) {}
  // `before_start` sees the system built and not yet elaborated (to bind foreign modules).
  explicit MbpHarness(const Config& c, uint64_t seed = 1, const std::function<void(mbp::System&)>& before_start = {}) {
    {
      Within in(root_);  // the runner's tree and statistics names: system.net, system.node<n>
      net_ = std::make_unique<net::Network>("net", net::NetConfig::from(c), stats_);
      wl_ = make_workload(c, *net_, stats_, seed);
    }
    mw_ = dynamic_cast<MbpWorkload*>(wl_.get());
    net_->set_client(wl_->net_client());
    if (before_start) before_start(mw_->system());
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
    net_->start();
    wl_->start();
  }
  // Runs until the workload is done, the system failed, or `max_ns` of simulated time.
  void run(double max_ns = 1e7) {
    while (!wl_->done() && net_->failure().empty() && sc_core::sc_time_stamp().to_seconds() * 1e9 < max_ns)
      sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_US));
  }
  mbp::System& sys() { return mw_->system(); }
  Workload& workload() { return *wl_; }
  net::Network& net() { return *net_; }
  nlohmann::ordered_json summary() { return wl_->summary(); }
  nlohmann::ordered_json stats() { return stats_.dump(); }
  const Stats& registry() const { return stats_; }

 private:
  Stats stats_;
  Root root_;
  std::unique_ptr<net::Network> net_;
  std::unique_ptr<Workload> wl_;
  MbpWorkload* mw_ = nullptr;
};

}  // namespace test
}  // namespace mbpsim
