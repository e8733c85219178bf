// The MBP system driven from a small harness in the test process (each TEST is its own
// process): translation, the Figure 2.7/2.8 coherence flow, latencies, atomics, protocol
// switches, and the hard errors of the controllers and checkers.
#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include <gtest/gtest.h>

#include "tests/mbp_harness.h"

namespace mbpsim {
namespace {

using nlohmann::json;
using test::MbpHarness;

json step(int node, int proc, double at_ns, const std::string& op, uint64_t addr, json extra = json::object()) {
  json s = {{"node", node}, {"proc", proc}, {"at_ns", at_ns}, {"op", op}, {"addr", addr}};
  for (auto it = extra.begin(); it != extra.end(); ++it) s[it.key()] = it.value();
  return s;
}

json script_config(int levels, const json& steps, json mbp = json::object()) {
  mbp["check_invariants"] = true;
  return {{"network", {{"radix", 4}, {"levels", levels}}},
          {"mbp", mbp},
          {"workload", {{"kind", "mbp_script"}, {"mbp_script", steps}}}};
}

uint64_t result(MbpHarness& h, size_t i) { return h.summary()["steps"][i]["result"].get<uint64_t>(); }
double done_ns(MbpHarness& h, size_t i) { return h.summary()["steps"][i]["done_ns"].get<double>(); }

// Figure 2.4: one network address, different node-physical addresses on different nodes.
TEST(MbpSystem, TwoStageTranslationMapsOneNetworkAddressToDifferentFrames) {
  // Pages 103 and 39 share a page colour and a home (node 3): node 2 maps 39 first, so 103
  // gets a different frame there than at node 1.
  const uint64_t a = 103 * 4096 + 0x40, other = 39 * 4096;
  json steps = {step(2, 0, 0, "load", other), step(2, 0, 100, "load", a), step(1, 0, 0, "store", a, {{"value", 0x5a5a}}),
                step(2, 1, 3000, "load", a)};
  MbpHarness h(script_config(1, steps));
  h.run();
  ASSERT_TRUE(h.workload().done());
  auto& s = h.sys();
  const uint64_t p1 = s.node_physical(1, a), p2 = s.node_physical(2, a), ph = s.node_physical(s.home_of(103), a);
  ASSERT_NE(p1, ~0ull);
  ASSERT_NE(p2, ~0ull);
  EXPECT_NE(p1, p2) << "the same network page must land in different node-physical frames";
  EXPECT_EQ(p1 % 4096, a % 4096);
  EXPECT_EQ(p2 % 4096, a % 4096);
  EXPECT_NE(ph, ~0ull);
  EXPECT_EQ(s.node_physical(0, a), ~0ull) << "node 0 never touched the page: no frame";
  EXPECT_EQ(result(h, 3), 0x5a5au) << "node 2 reads node 1's write through its own frame";
}

// Figures 2.7/2.8 on a real coherence action: S = node 4 writes a block of its own page that
// A, B, H, I and K (5, 6, 8, 9, 11) cache; the invalidation reaches exactly A, B, H, I, J and K,
// J answers with a dummy acknowledgement, and the home receives one combined acknowledgement.
TEST(MbpSystem, Figure27InvalidationReachesSixNodesAndHomeGetsOneAck) {
  const uint64_t a = 4 * 4096;  // page 4: home node 4 (interleaved placement)
  json steps = json::array();
  for (int n : {5, 6, 8, 9, 11}) steps.push_back(step(n, 0, 0, "load", a));
  steps.push_back(step(4, 0, 20000, "store", a, {{"value", 0x77}}));
  steps.push_back(step(10, 0, 40000, "load", a));
  steps.push_back(step(5, 1, 40000, "load", a));
  MbpHarness h(script_config(2, steps, {{"format_mix", {1, 0, 0}}}));
  h.run();
  ASSERT_TRUE(h.workload().done());
  ASSERT_TRUE(h.net().failure().empty()) << h.net().failure();
  EXPECT_EQ(h.sys().home_of(4), 4u);
  const std::set<uint32_t> expect = {5, 6, 8, 9, 10, 11};
  for (uint32_t n = 0; n < 16; ++n)
    EXPECT_EQ(h.sys().round_deliveries(n), expect.count(n) ? 1u : 0u) << "node " << n;
  auto st = h.stats()["system"]["mbp"]["rounds"];
  EXPECT_EQ(st["multicast"], 1);
  EXPECT_EQ(st["deliveries"], 6);
  EXPECT_EQ(st["acks_at_home"], 1) << "one combined acknowledgement";
  EXPECT_EQ(st["deliveries_without_copy"], 1) << "J held no copy";
  EXPECT_EQ(st["acks_from_holders"], 5);
  EXPECT_EQ(result(h, 6), 0x77u);
  EXPECT_EQ(result(h, 7), 0x77u);
}

// A lone processor's local accesses cost exactly what the timing parameters say
// (defaults: 200 MHz CPU, 100 MHz bus and MBP, 80 ns DRAM; see docs/ARCHITECTURE.md).
TEST(MbpSystem, ZeroLoadLocalLatenciesFollowTheParameters) {
  json steps = {step(0, 0, 0, "load", 0x0), step(0, 0, 1000, "load", 0x20), step(0, 0, 2000, "load", 0x20),
                step(0, 0, 3000, "store", 0x20, {{"value", 1}})};
  MbpHarness h(script_config(1, steps));
  h.run();
  ASSERT_TRUE(h.workload().done());
  // P-TLB walk 200 + L1 5 + L2 50 + bus (arbitration and address 20, DRAM 80, four beats 40)
  // + C-TLB refill 120.
  EXPECT_DOUBLE_EQ(done_ns(h, 0), 515);
  EXPECT_DOUBLE_EQ(done_ns(h, 1), 1000 + 5 + 50 + 20 + 80 + 40);  // TLBs warm, another bank
  EXPECT_DOUBLE_EQ(done_ns(h, 2), 2005);                          // L1 hit
  EXPECT_DOUBLE_EQ(done_ns(h, 3), 3005);                          // store hit on an exclusive line
}

// Remote atomics run at the home, one after another, whatever the page's protocol.
TEST(MbpSystem, AtomicsFromManyNodesSerialiseAtTheHome) {
  json regions = {{{"base", 0x1000}, {"bytes", 4096}, {"protocol", "invalidate"}},
                  {{"base", 0x2000}, {"bytes", 4096}, {"protocol", "update"}},
                  {{"base", 0x3000}, {"bytes", 4096}, {"protocol", "noncacheable"}}};
  json steps = json::array();
  for (uint64_t page : {0x1000, 0x2000, 0x3000})
    for (int n = 0; n < 16; ++n) steps.push_back(step(n, n % 4, 0, "fetch_add", page + 8, {{"value", 1}}));
  for (uint64_t page : {0x1000, 0x2000, 0x3000}) steps.push_back(step(3, 2, 60000, "load", page + 8));
  for (int n = 0; n < 8; ++n) steps.push_back(step(n * 2, 1, 0, "comp_swap", 0x1010, {{"compare", 0}, {"value", n + 1}}));
  for (int n = 0; n < 4; ++n) steps.push_back(step(n * 4 + 1, 3, 0, "fetch_add_vec", 0x2020, {{"values", {1, 2, 3}}}));
  steps.push_back(step(7, 0, 60000, "load", 0x2020, {{"size", 8}}));
  steps.push_back(step(7, 0, 60000, "load", 0x2028, {{"size", 4}}));
  MbpHarness h(script_config(2, steps, {{"regions", regions}}));
  h.run();
  ASSERT_TRUE(h.workload().done());
  ASSERT_TRUE(h.net().failure().empty()) << h.net().failure();
  for (int p = 0; p < 3; ++p) {
    std::vector<uint64_t> olds;
    for (int n = 0; n < 16; ++n) olds.push_back(result(h, p * 16 + n));
    std::sort(olds.begin(), olds.end());
    for (int i = 0; i < 16; ++i) EXPECT_EQ(olds[i], static_cast<uint64_t>(i)) << "page " << p;
    EXPECT_EQ(result(h, 48 + p), 16u) << "page " << p;
  }
  int winners = 0;
  for (int n = 0; n < 8; ++n) winners += result(h, 51 + n) == 0;
  EXPECT_EQ(winners, 1) << "exactly one compare&swap succeeds";
  EXPECT_EQ(result(h, 63), 4u) << "vector fetch&add: four processors add 1, 2, 3 to three words";
  EXPECT_EQ(result(h, 64), 8u);
}

// Switching a page between the three protocols while nodes hold copies never loses a write.
TEST(MbpSystem, ProtocolSwitchesKeepEveryValue) {
  const uint64_t a = 0x5040;  // page 5: home node 5
  json steps = {
      step(1, 0, 0, "store", a, {{"value", 0x11}}),      // invalidate-type: node 1 owns it
      step(2, 0, 5000, "load", a),                       // 0x11, node 2 shares
      step(3, 0, 10000, "set_protocol", a, {{"protocol", "update"}}),
      step(2, 0, 20000, "store", a, {{"value", 0x22}}),  // update-type: through the home
      step(2, 0, 20001, "fence", 0),
      step(1, 0, 30000, "load", a),                      // 0x22 (its copy was updated)
      step(3, 0, 35000, "set_protocol", a, {{"protocol", "noncacheable"}}),
      step(3, 1, 45000, "store", a, {{"value", 0x33}}),
      step(3, 1, 45001, "fence", 0),
      step(1, 1, 55000, "load", a),                      // 0x33 from the home
      step(6, 0, 60000, "set_protocol", a, {{"protocol", "invalidate"}}),
      step(2, 2, 70000, "load", a),                      // 0x33
      step(2, 2, 75000, "store", a, {{"value", 0x44}}),
      step(1, 2, 80000, "load", a),                      // 0x44
  };
  MbpHarness h(script_config(2, steps));
  h.run();
  ASSERT_TRUE(h.workload().done());
  ASSERT_TRUE(h.net().failure().empty()) << h.net().failure();
  EXPECT_EQ(result(h, 1), 0x11u);
  EXPECT_EQ(result(h, 5), 0x22u);
  EXPECT_EQ(result(h, 9), 0x33u);
  EXPECT_EQ(result(h, 11), 0x33u);
  EXPECT_EQ(result(h, 13), 0x44u);
  EXPECT_EQ(h.stats()["system"]["mbp"]["protocol_switches"], 3);
  EXPECT_EQ(h.sys().protocol_of(5), node::Protocol::Invalidate);
}

// A processor reads its own buffered store to an update page before the home acknowledges it.
TEST(MbpSystem, WriteBufferForwardsOwnStores) {
  json regions = {{{"base", 0x2000}, {"bytes", 4096}, {"protocol", "update"}}};
  json steps = {step(1, 0, 0, "load", 0x2000), step(1, 0, 1000, "store", 0x2004, {{"value", 0xab}, {"size", 1}}),
                step(1, 0, 1001, "load", 0x2000), step(1, 0, 1002, "fence", 0), step(1, 1, 9000, "load", 0x2000)};
  MbpHarness h(script_config(1, steps, {{"regions", regions}}));
  h.run();
  ASSERT_TRUE(h.workload().done());
  EXPECT_EQ(result(h, 2), 0xab00000000ull);
  EXPECT_LT(done_ns(h, 2), done_ns(h, 3)) << "the load completed before the write was acknowledged";
  EXPECT_EQ(result(h, 4), 0xab00000000ull);
  EXPECT_GT(h.stats()["system"]["node1"]["write_buffer"]["forwards"].get<int>(), 0);
}

// L3 replacement: a node that may keep one remote page writes an exclusive block back when it
// touches another page, and forgets the first page's translation.
TEST(MbpSystem, L3ReplacementWritesBackExclusiveBlocks) {
  json steps = {step(2, 0, 0, "store", 0x1008, {{"value", 0x99}}),  // page 1 (home 1): exclusive at node 2
                step(2, 0, 5000, "load", 0x3000),                     // page 3 (home 3) evicts page 1
                step(3, 0, 20000, "load", 0x1008)};
  json cfg = script_config(2, steps);
  cfg["node"] = {{"l3_pages", 1}};
  MbpHarness h(cfg);
  h.run(15000);
  EXPECT_EQ(h.sys().node_physical(2, 0x1008), ~0ull) << "the evicted page has no frame at node 2";
  EXPECT_NE(h.sys().node_physical(2, 0x3000), ~0ull);
  h.run();
  ASSERT_TRUE(h.workload().done());
  ASSERT_TRUE(h.net().failure().empty()) << h.net().failure();
  EXPECT_EQ(result(h, 2), 0x99u) << "the written-back value reached the home";
  auto n2 = h.stats()["system"]["node2"]["l3"];
  EXPECT_EQ(n2["page_evictions"], 1);
  EXPECT_EQ(n2["block_writebacks"], 1);
  EXPECT_EQ(h.stats()["system"]["mbp"]["messages"]["PutX"], 1);
  EXPECT_EQ(h.stats()["system"]["mbp"]["recalls"], 0) << "the home had the data back before node 3 asked";
}

// A 16-node machine in which node 2 has loaded a shared copy of page 1 (home: node 1).
std::unique_ptr<MbpHarness> node2_shares_page1() {
  auto h = std::make_unique<MbpHarness>(script_config(2, json::array({step(2, 0, 0, "load", 0x1000)})));
  h->run();
  EXPECT_TRUE(h->workload().done());
  EXPECT_EQ(mbp::SystemTestPeer::state(h->sys(), 2, 0x1000), static_cast<uint8_t>(mbp::RState::S));
  EXPECT_EQ(mbp::SystemTestPeer::state(h->sys(), 1, 0x1000), static_cast<uint8_t>(mbp::HState::Shared));
  return h;
}

// An undefined transition is a hard error naming the controller, address, state and event.
TEST(MbpSystem, UndefinedTransitionStopsTheRunWithItsName) {
  auto hp = node2_shares_page1();
  MbpHarness& h = *hp;
  // A recall only goes to an exclusive owner: to a shared copy it is undefined.
  mbp::SystemTestPeer::inject(h.sys(), mbp::MsgType::Recall, 1, 2, 0x1000);
  sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_US));
  const std::string f = h.net().failure();
  EXPECT_NE(f.find("undefined transition in the remote controller of node 2: block 0x1000 in state S got event Recall"),
            std::string::npos)
      << f;
  EXPECT_GE(h.stats()["system"]["mbp"]["transitions"]["remote"]["I"]["Load"].get<int>(), 1);
}

// The home table's next-state column is enforced: a transition that would leave the block in a
// state its row does not list stops the run like an undefined pair, naming it.
TEST(MbpSystem, AHomeStateOutsideTheRowsNextColumnStopsTheRun) {
  auto hp = node2_shares_page1();
  MbpHarness& h = *hp;
  // Listed: an invalidation round for a GetX to a shared block.
  EXPECT_NO_THROW(mbp::SystemTestPeer::home_to(h.sys(), 1, 0x1000, mbp::HState::Shared, mbp::HEvent::GetX, mbp::HState::InvRound));
  // Not listed: a GetS to a shared block never makes it exclusive.
  EXPECT_THROW(mbp::SystemTestPeer::home_to(h.sys(), 1, 0x1000, mbp::HState::Shared, mbp::HEvent::GetS, mbp::HState::Owned),
               mbp::ProtocolFailure);
  EXPECT_NE(h.net().failure().find("home controller of node 1: block 0x1000 in state Shared got event GetS (leading to Owned, which its row does not list)"),
            std::string::npos)
      << h.net().failure();
}

// The update-page checker: after an update round every copy equals the home's memory.
TEST(MbpSystem, UpdateCheckerCatchesACorruptCopy) {
  json regions = {{{"base", 0x1000}, {"bytes", 4096}, {"protocol", "update"}}};
  json steps = {step(2, 0, 0, "load", 0x1000), step(3, 0, 0, "load", 0x1000),
                step(3, 0, 20000, "store", 0x1000, {{"value", 9}, {"size", 1}}), step(3, 0, 20001, "fence", 0)};
  MbpHarness h(script_config(2, steps, {{"regions", regions}}));
  h.run(19000);
  ASSERT_EQ(mbp::SystemTestPeer::state(h.sys(), 2, 0x1000), static_cast<uint8_t>(mbp::RState::S));
  mbp::SystemTestPeer::byte(h.sys(), 2, 0x1000 + 17) ^= 0xff;  // a byte the update leaves alone
  h.run();
  EXPECT_NE(h.net().failure().find("update invariant"), std::string::npos) << h.net().failure();
  EXPECT_NE(h.net().failure().find("node 2 holds its L3 copy"), std::string::npos) << h.net().failure();
}

// The data-value checker: a load of an invalidate-type page returns the last write.
TEST(MbpSystem, ValueCheckerCatchesAStaleCopy) {
  json steps = {step(2, 0, 0, "load", 0x1000), step(2, 1, 20000, "load", 0x1008)};
  MbpHarness h(script_config(2, steps));
  h.run(19000);
  mbp::SystemTestPeer::byte(h.sys(), 2, 0x1000 + 8) ^= 0x01;
  h.run();
  EXPECT_NE(h.net().failure().find("data-value invariant"), std::string::npos) << h.net().failure();
}

// A driver that knows its later ops names one with each op (MemOp::ahead; SharingWorkload the
// one kAheadOps after it), and the processor prefetches the simulator's records of that block. The hint
// must name the op that really comes (a wrong one would only cost speed, so nothing else would
// notice), and the processors must take it: a compiler once deleted the whole prefetch as a call
// without side effects.
TEST(MbpSystem, TheSharingWorkloadNamesTheOpKAheadOpsOnAndTheProcessorsPrefetchIt) {
  struct Seen {
    node::OpKind kind;
    uint64_t addr;
    node::MemOp::Ahead ahead;
    uint64_t ahead_addr;
  };
  struct Recorder : node::ProcDriver {
    node::ProcDriver* inner = nullptr;
    std::map<std::pair<uint32_t, uint32_t>, std::vector<Seen>> ops;
    bool next(uint32_t n, uint32_t p, node::MemOp& op) override {
      if (!inner->next(n, p, op)) return false;
      ops[{n, p}].push_back({op.kind, op.addr, op.ahead, op.ahead_addr});
      return true;
    }
    void complete(uint32_t n, uint32_t p, const node::MemOp& op, uint64_t t) override { inner->complete(n, p, op, t); }
  } rec;
  const json cfg = {{"network", {{"radix", 4}, {"levels", 1}}},
                    {"node", {{"procs", 2}}},
                    {"workload", {{"kind", "mbp_sharing"}}},
                    {"sharing", {{"refs_per_proc", 2000}, {"shared_fraction", 0.05}, {"fence_every", 97}}}};
  MbpHarness h(Config::from_json(schema(), cfg, "test.json"), 7, [&](mbp::System& s) {
    rec.inner = s.driver(0, 0);
    s.set_driver(&rec);
  });
  h.run(1e9);
  ASSERT_TRUE(h.workload().done()) << h.net().failure();
  ASSERT_EQ(rec.ops.size(), 8u);
  uint64_t named = 0, all = 0;
  for (const auto& [proc, seq] : rec.ops) {
    ASSERT_EQ(seq.size(), 2001u);  // 2,000 references and the closing fence
    for (size_t i = 0; i < seq.size(); ++i) {
      const Seen& a = seq[i];
      const size_t j = i + node::MemOp::kAheadOps;
      if (j >= seq.size() || (seq[j].kind != node::OpKind::Load && seq[j].kind != node::OpKind::Store)) {
        EXPECT_EQ(a.ahead, node::MemOp::Ahead::Unknown) << "op " << i;
        continue;
      }
      const Seen& b = seq[j];
      ASSERT_EQ(a.ahead, b.kind == node::OpKind::Store ? node::MemOp::Ahead::Store : node::MemOp::Ahead::Load) << "op " << i;
      ASSERT_EQ(a.ahead_addr, b.addr) << "op " << i;
      ++named;
    }
    all += seq.size();
  }
  EXPECT_GT(named, all * 9 / 10);
  // Nearly every named op's page was translated recently (one private page, few shared ones).
  EXPECT_GT(h.sys().prefetched(), named * 8 / 10);
  EXPECT_LE(h.sys().prefetched(), named);
}

}  // namespace
}  // namespace mbpsim
