// TLM-2.0 at the MBP node's memory: a memory written by a user in plain TLM-2.0
// (tests/user_tlm_memory.h, no mbpsim header) replaces memory banks of MBP nodes. The node bus
// takes each frame's bytes from its banks through DMI, so the home memory and the L3 copies of
// those banks live in the user's memory: the coherence random tester passes over it, the bytes
// sit where use_bank's address map says, and a read latency the memory states is paid.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "models/mbp/system.h"
#include "sim/runner.h"
#include "tests/mbp_harness.h"
#include "tests/test_util.h"
#include "tests/user_tlm_memory.h"

namespace mbpsim {
namespace {

using nlohmann::json;

// Where use_bank says node-physical address p lives: bank (p / u) % banks, at (p / (u * banks))
// * u + p % u in it (u = 32, 4 banks: the defaults).
constexpr uint64_t kUnit = 32, kBanks = 4;
uint64_t bank_of(uint64_t p) { return (p / kUnit) % kBanks; }
uint64_t local_of(uint64_t p) { return (p / (kUnit * kBanks)) * kUnit + p % kUnit; }

TEST(ForeignBank, UserBanksHoldTheMemoryAndTheCoherenceTesterPasses) {
  const uint64_t seed = 3;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  // Every bank of node 3, and bank 2 of node 7: home memory and L3 copies in user memory.
  std::vector<std::unique_ptr<UserMemory>> user;
  auto bind = [&](mbp::System& s) {
    for (uint32_t b = 0; b < kBanks; ++b) {
      user.push_back(std::make_unique<UserMemory>(("user_n3_bank" + std::to_string(b)).c_str(), 1 << 20, sc_core::SC_ZERO_TIME));
      s.use_bank(3, b, user.back()->socket);
    }
    user.push_back(std::make_unique<UserMemory>("user_n7_bank2", 1 << 20, sc_core::SC_ZERO_TIME));
    s.use_bank(7, 2, user.back()->socket);
  };
  test::MbpHarness h(load_config(test::config_path("mbp16-random-tester.json"), {"tester.checks=1500"}), seed, bind);
  h.run(1e9);
  mbp::System& s = h.sys();
  ASSERT_TRUE(s.failure().empty()) << s.failure();
  ASSERT_TRUE(h.net().failure().empty()) << h.net().failure();
  const json sum = h.summary();
  ASSERT_TRUE(h.workload().done()) << sum.dump();
  EXPECT_EQ(sum["checks_completed"], 1500);
  EXPECT_EQ(sum["check_failures"], 0) << "seed " << seed;
  for (auto& u : user) EXPECT_GT(u->dmi_grants, 0u) << u->name() << " held no frame";
  // The module tree docs/ARCHITECTURE.md draws: every node's banks and the bus's sockets to them.
  for (uint32_t n = 0; n < 16; ++n)
    for (uint32_t b = 0; b < kBanks; ++b) {
      const std::string node = "system.node" + std::to_string(n);
      EXPECT_NE(sc_core::sc_find_object((node + ".bank" + std::to_string(b) + ".socket").c_str()), nullptr) << node;
      EXPECT_NE(sc_core::sc_find_object((node + ".bus.to_bank" + std::to_string(b)).c_str()), nullptr) << node;
    }
  EXPECT_EQ(&s.bank(3, 1), static_cast<mem::TargetSocket*>(&user[1]->socket));

  // Node 3's home pages: every byte read from the home is the user's, at the documented place;
  // a byte the user's memory changes is what the home then holds.
  int homes = 0;
  for (uint64_t page = 0; page < 4096; ++page) {
    const uint64_t a = page * 4096;
    const uint64_t p = s.node_physical(3, a);
    if (p == ~0ull || s.home_of(page) != 3) continue;
    ++homes;
    for (uint64_t off = 0; off < 4096; off += 8) {
      uint8_t got[8];
      s.read_home(a + off, got, 8);
      const UserMemory& u = *user[bank_of(p + off)];
      ASSERT_EQ(std::memcmp(got, &u.bytes[local_of(p + off)], 8), 0) << "page " << page << " offset " << off;
    }
    UserMemory& u = *user[bank_of(p + 40)];
    u.bytes[local_of(p + 40)] ^= 0xa5;
    uint8_t now[8], then[8];
    s.read_home(a + 40, now, 1);
    u.bytes[local_of(p + 40)] ^= 0xa5;
    s.read_home(a + 40, then, 1);
    EXPECT_EQ(now[0] ^ then[0], 0xa5) << "the home's byte is the user's memory";
  }
  EXPECT_GT(homes, 0) << "no tester page is homed at node 3";
}

json script_config(const json& steps) {
  return {{"network", {{"radix", 4}, {"levels", 1}}},
          {"workload", {{"kind", "mbp_script"}, {"mbp_script", steps}}}};
}
json step(int node, double at_ns, const std::string& op, uint64_t addr) {
  return {{"node", node}, {"proc", 0}, {"at_ns", at_ns}, {"op", op}, {"addr", addr}};
}

// The zero-load local latencies of tests/unit/mbp_system_test.cpp, with bank 0 of node 0 a
// user memory stating a 1 us DMI read latency: the first load (bank 0) pays 1000 ns instead
// of node.bank_latency_ns (80 ns), the second (bank 1, the node's own) does not.
TEST(ForeignBank, ADmiReadLatencyTheBankStatesIsPaid) {
  UserMemory slow("slow_bank", 1 << 20, sc_core::sc_time(1, sc_core::SC_US));
  const json steps = {step(0, 0, "load", 0x0), step(0, 2000, "load", 0x20)};
  test::MbpHarness h(Config::from_json(schema(), script_config(steps), "test.json"), 1,
                     [&](mbp::System& s) { s.use_bank(0, 0, slow.socket); });
  h.run();
  ASSERT_TRUE(h.workload().done());
  const json st = h.summary()["steps"];
  EXPECT_DOUBLE_EQ(st[0]["done_ns"].get<double>(), 515 - 80 + 1000);
  EXPECT_DOUBLE_EQ(st[1]["done_ns"].get<double>(), 2000 + 5 + 50 + 20 + 80 + 40);
}

// A bank that grants no DMI fails the run (exit status 2 under mbpsim run) when the first
// frame is taken from it, naming the node and the bank.
TEST(ForeignBank, ABankWithoutDmiFailsTheRunNamingNodeAndBank) {
  UserMemory nodmi("nodmi_bank", 1 << 20, sc_core::SC_ZERO_TIME);
  nodmi.grant_dmi = false;
  const json steps = json::array({step(1, 0, "load", 0x20)});  // (not {x}: clang reads a one-element list as a copy of x)
  test::MbpHarness h(Config::from_json(schema(), script_config(steps), "test.json"), 1,
                     [&](mbp::System& s) { s.use_bank(1, 1, nodmi.socket); });
  h.run();
  EXPECT_FALSE(h.workload().done());
  EXPECT_NE(h.sys().failure().find("node 1 bank 1: the bank grants no read/write DMI over [0x"), std::string::npos)
      << h.sys().failure();
}

// Something the user's platform does at a time of the run.
struct At : sc_core::sc_module {
  SC_HAS_PROCESS(At);
  At(sc_core::sc_module_name n, sc_core::sc_time t, std::function<void()> fn) : sc_core::sc_module(n), t_(t), fn_(std::move(fn)) {
    SC_THREAD(run);
  }
  void run() {
    wait(t_);
    fn_();
  }
  sc_core::sc_time t_;
  std::function<void()> fn_;
};

// The node bus holds each frame's bytes by DMI for the whole run: a bank that takes its DMI
// back (invalidate_direct_mem_ptr) ends the run, naming the node, the bank and the range.
TEST(ForeignBank, ABankThatRevokesDmiFailsTheRunNamingNodeAndBank) {
  UserMemory fickle("fickle_bank", 1 << 20, sc_core::SC_ZERO_TIME);
  At revoke("revoke", sc_core::sc_time(1, sc_core::SC_US), [&fickle] { fickle.revoke(); });
  const json steps = {step(1, 0, "load", 0x20), step(1, 5000, "load", 0x20)};
  test::MbpHarness h(Config::from_json(schema(), script_config(steps), "test.json"), 1,
                     [&](mbp::System& s) { s.use_bank(1, 1, fickle.socket); });
  h.run();
  EXPECT_EQ(fickle.dmi_grants, 1u);  // the first load took the frame
  EXPECT_FALSE(h.workload().done());  // the run stopped before the second
  EXPECT_EQ(h.sys().failure(), "node 1 bank 1: the bank revoked DMI over [0x0, 0xfffff]: the node bus holds the frames' bytes by DMI for the whole run");
}

// A bank cannot be replaced once elaboration is over.
TEST(ForeignBank, ABankIsReplacedOnlyBeforeTheRun) {
  UserMemory late("late_bank", 1 << 20, sc_core::SC_ZERO_TIME);
  const json steps = json::array({step(1, 0, "load", 0x20)});  // (not {x}: clang reads a one-element list as a copy of x)
  test::MbpHarness h(Config::from_json(schema(), script_config(steps), "test.json"), 1,
                     [&](mbp::System& s) { s.use_bank(1, 1, late.socket); });
  EXPECT_THROW(h.sys().use_bank(1, 2, late.socket), std::logic_error);
  EXPECT_THROW(h.sys().use_bank(1, 9, late.socket), std::out_of_range);
  EXPECT_NE(&h.sys().bank(1, 2), static_cast<mem::TargetSocket*>(&late.socket)) << "bank 2 is still the node's own";
}

}  // namespace
}  // namespace mbpsim
