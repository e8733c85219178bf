// The executor seam (models/mbcf/executor.h): a protocol engine a user writes against
// mbcf::Executor runs MBCF's protocol for the unchanged stack (command semantics, Go-back-N)
// on the conventional NIC, in place of the host kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "models/core/module_tree.h"
#include "models/mbcf/ether_system.h"
#include "models/mbcf/executor.h"
#include "tests/integration/cluster_tasks.h"

namespace {

using namespace mbpsim;
using namespace mbpsim::mbcf;

constexpr uint64_t kUs = 1000000;

// The user's offload engine: a processor of its own, `speedup` times the host kernel's speed
// for the protocol's routines, one routine at a time; a request costs the host a doorbell of
// 1 us and no system call; entering the receive routine takes 0.5 us; it moves data at
// 100 MB/s.
class OffloadEngine final : public Executor {
 public:
  static constexpr uint64_t kDoorbellPs = kUs, kEntryPs = kUs / 2, kPsPerByte = 10000;
  OffloadEngine(EtherSystem& sys, uint32_t node, double speedup) : sys_(sys), node_(node), speedup_(speedup) {}
  uint64_t proto_ps(double kernel_cycles) const override { return sys_.cycles_ps(kernel_cycles / speedup_); }
  void work(uint64_t dur, std::function<void()> fn) override {
    const uint64_t start = std::max(sys_.cal().now_ps(), free_at_);
    free_at_ = start + dur;
    work_ps += dur;
    sys_.cal().at(free_at_, std::move(fn));
  }
  void issue(uint32_t ptask, const Request& r, Built b, std::function<void()> k) override {
    (void)ptask, (void)r;
    ++issued;
    sys_.count_emb_requests(node_, b.packet);
    sys_.compute(node_, kDoorbellPs, [this, b = std::move(b), k = std::move(k)]() mutable {
      sys_.send_request(node_, b.dst, std::move(b.packet));
      k();
    });
  }
  uint64_t rx_entry_ps() override { return kEntryPs; }
  void upcall(uint64_t msg, std::function<void()> k) override { (void)msg, k(); }
  uint64_t data_move_ps(const Packet& p, ExecResult& r) override {
    (void)p;
    moved += r.data_bytes;
    return r.data_bytes * kPsPerByte;
  }
  void run_pollers(uint64_t at) override { sys_.cpu(node_).run_pollers(at); }
  uint64_t work_ps = 0, moved = 0;
  uint32_t issued = 0;

 private:
  EtherSystem& sys_;
  const uint32_t node_;
  const double speedup_;
  uint64_t free_at_ = 0;
};

// Four nodes on the conventional NIC and a switch: nodes 0 and 1 run the protocol on the user's
// engines, nodes 2 and 3 in the host kernel (the factory gives none for them). The pairs 0 -> 1
// and 2 -> 3 see the same NIC and wire.
struct EngineCluster {
  Stats stats;
  Root root;  // built in it as the runner builds: statistics under system.*
  Calendar cal{"cal"};
  EtherSysConfig ec;
  std::vector<OffloadEngine*> engines;
  std::unique_ptr<EtherSystem> sys;
  EngineCluster() {
    Within in(root);
    ec.nodes = 4;
    ec.ether.medium = net::EtherConfig::Medium::Switch;
    ec.tx_done_cycles = 0;  // no transmit-completion interrupt: the host CPU does no NIC work
    engines.resize(ec.nodes);
    sys = std::make_unique<EtherSystem>(cal, ec, stats, 1, nullptr, [this](uint32_t n, EtherSystem& s) -> std::unique_ptr<Executor> {
      if (n >= 2) return nullptr;
      auto e = std::make_unique<OffloadEngine>(s, n, 4.0);
      engines[n] = e.get();
      return e;
    });
    test::one_task_per_node(*sys, 16);
  }
  Request write(uint32_t to, uint32_t laddr, uint32_t v) { return test::word_write(to, laddr, v); }
  void stream(uint32_t from, uint32_t to, uint32_t n, uint32_t v0) { test::stream_writes(*sys, from, to, n, v0); }
  uint32_t word(uint32_t n, uint32_t a) { return test::task_word(*sys, n, a); }
};

TEST(ForeignExecutor, AUsersEngineRunsTheProtocolAndTheReceivingHostCpuDoesNothing) {
  EngineCluster c;
  const uint32_t n = 100;
  c.stream(0, 1, n, 900);   // engines
  c.stream(2, 3, n, 5000);  // kernels
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_SEC));
  ASSERT_TRUE(c.sys->failure().empty()) << c.sys->failure();
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_EQ(c.word(1, 0x10000 + 4 * i), 900 + i) << "word " << i;
    EXPECT_EQ(c.word(3, 0x10000 + 4 * i), 5000 + i) << "word " << i;
  }
  EXPECT_TRUE(c.sys->quiet()) << c.sys->state_dump();
  EXPECT_EQ(c.sys->delivered(0, 1), n);
  EXPECT_EQ(c.sys->delivered(2, 3), n);
  // Every request went through the sender's engine; the receiver's ran every routine and
  // moved every written byte; the receiving host's CPU spent nothing on communication.
  EXPECT_EQ(c.engines[0]->issued, n);
  EXPECT_EQ(c.engines[1]->issued, 0u);
  EXPECT_EQ(c.engines[1]->moved, 4u * n);
  EXPECT_GT(c.engines[1]->work_ps, n * (OffloadEngine::kEntryPs / 8 + c.sys->cycles_ps(c.ec.int_packet_cycles / 4)));
  EXPECT_EQ(c.sys->host_busy_ps(1), 0u);
  // Under the kernel, the receiving CPU ran the routine for every packet.
  EXPECT_GT(c.sys->host_busy_ps(3), n * c.sys->cycles_ps(c.ec.int_packet_cycles));
}

TEST(ForeignExecutor, TheRequestAndTheRoutineEntryCostWhatTheExecutorSays) {
  // One write on each pair from an idle cluster: when the sender's NIC gets the packet (after
  // the request's cost) and when the receiver's routine takes it (after the routine's entry).
  EngineCluster c;
  uint64_t to_nic[4] = {}, accepted[4] = {};
  c.sys->set_tx_hook([&](uint32_t from, uint32_t, const Packet& p) {
    if (!p.cmds.empty() && p.cmds[0].cmd == Cmd::Write) to_nic[from] = c.cal.now_ps();
  });
  c.sys->set_accept_hook([&](uint32_t from, uint32_t, const Packet& p) {
    if (!p.cmds.empty() && p.cmds[0].cmd == Cmd::Write) accepted[from] = c.cal.now_ps();
  });
  ASSERT_TRUE(c.sys->syscall(0, 1, c.write(1, 0x10000, 7), [] {}));
  ASSERT_TRUE(c.sys->syscall(2, 1, c.write(3, 0x10000, 8), [] {}));
  sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_MS));
  EXPECT_EQ(c.word(1, 0x10000), 7u);
  EXPECT_EQ(c.word(3, 0x10000), 8u);
  // The engine's request reached the NIC after its doorbell, exactly; the kernel's after the
  // system call (its fixed part at least).
  EXPECT_EQ(to_nic[0], OffloadEngine::kDoorbellPs);
  EXPECT_GE(to_nic[2], c.sys->cycles_ps(c.ec.syscall_cycles));
  // From the NIC to the routine: the same NIC and wire, then the routine's entry: the engine's
  // 0.5 us, the kernel's interrupt entry.
  ASSERT_GT(accepted[0], to_nic[0]);
  ASSERT_GT(accepted[2], to_nic[2]);
  const uint64_t kernel_entry = c.sys->cycles_ps(c.ec.os.int_entry_cycles);
  EXPECT_EQ(accepted[2] - to_nic[2], accepted[0] - to_nic[0] - OffloadEngine::kEntryPs + kernel_entry);
  // (the frame's 64 bytes at 100 Mbit/s alone are 5.12 us)
  EXPECT_GT(accepted[0] - to_nic[0], 5 * kUs);
}

}  // namespace
