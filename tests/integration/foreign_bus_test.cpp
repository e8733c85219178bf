// TLM-2.0 at an MBP node's bus, below the processors' caches (models/mbp/node_bus.h): a bus
// monitor written by a user (UserBusMonitor: a passthrough of plain TLM-2.0 that reads the
// BusOp extension) sits between processors and their node bus through System::use_bus_path.
// It sees every miss, write-back and request of those processors: the coherence random tester
// passes through it, what it counts equals the node's own statistics, a delay it adds on the
// way in is paid, and a bus master of the user's on the bus socket gets the home memory's bytes
// or the base protocol's errors. A path that answers with an error fails the run naming the
// node, the processor and the transaction.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "models/mbp/node_bus.h"
#include "models/mbp/system.h"
#include "sim/runner.h"
#include "tests/mbp_harness.h"
#include "tests/test_util.h"

namespace mbpsim {
namespace {

using mbp::BusOp;
using nlohmann::json;

// The user's monitor: every transaction passes through, `extra` is added on its way in, and
// what the bus answered is counted by kind and supplier.
struct UserBusMonitor : sc_core::sc_module {
  tlm_utils::simple_target_socket<UserBusMonitor> in{"in"};
  tlm_utils::simple_initiator_socket<UserBusMonitor> out{"out"};
  sc_core::sc_time extra = sc_core::SC_ZERO_TIME;
  std::map<std::pair<BusOp::Kind, BusOp::Supplier>, uint64_t> seen;
  uint64_t without_extension = 0, errors = 0;
  explicit UserBusMonitor(sc_core::sc_module_name n) : sc_core::sc_module(n) { in.register_b_transport(this, &UserBusMonitor::b_transport); }
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    delay += extra;
    out->b_transport(gp, delay);
    const BusOp* op = gp.get_extension<BusOp>();
    if (!op) return void(++without_extension);
    if (!gp.is_response_ok()) ++errors;
    ++seen[{op->kind, op->supplier}];
  }
  uint64_t count(BusOp::Kind k, BusOp::Supplier s) const {
    auto it = seen.find({k, s});
    return it == seen.end() ? 0 : it->second;
  }
};

uint64_t stat(const json& st, const std::string& dotted) {
  const json* j = &st;
  size_t from = 0;
  while (true) {
    const size_t dot = dotted.find('.', from);
    j = &(*j).at(dotted.substr(from, dot - from));
    if (dot == std::string::npos) return j->get<uint64_t>();
    from = dot + 1;
  }
}

TEST(ForeignBus, AUsersMonitorSeesEveryTransactionOfItsProcessorsAndTheTesterPasses) {
  const uint64_t seed = 5;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  constexpr uint32_t kNode = 3;
  std::vector<std::unique_ptr<UserBusMonitor>> mon;
  auto bind = [&](mbp::System& s) {
    for (uint32_t p = 0; p < s.procs(); ++p) {
      mon.push_back(std::make_unique<UserBusMonitor>(("user_monitor" + std::to_string(p)).c_str()));
      s.use_bus_path(kNode, p, mon.back()->in);
      mon.back()->out.bind(s.bus_socket(kNode));
    }
  };
  test::MbpHarness h(load_config(test::config_path("mbp16-random-tester.json"), {"tester.checks=1500"}), seed, bind);
  h.run(1e9);
  mbp::System& s = h.sys();
  ASSERT_TRUE(s.failure().empty()) << s.failure();
  const json sum = h.summary();
  ASSERT_TRUE(h.workload().done()) << sum.dump();
  EXPECT_EQ(sum["checks_completed"], 1500);
  EXPECT_EQ(sum["check_failures"], 0) << "seed " << seed;
  ASSERT_GE(mon.size(), 2u);

  // What the monitors saw, summed over the node's processors.
  auto total = [&](BusOp::Kind k, BusOp::Supplier sup) {
    uint64_t n = 0;
    for (auto& m : mon) n += m->count(k, sup);
    return n;
  };
  using K = BusOp::Kind;
  using S = BusOp::Supplier;
  for (auto& m : mon) {
    EXPECT_EQ(m->without_extension, 0u) << m->name();
    EXPECT_EQ(m->errors, 0u) << m->name();
  }
  // Every transaction of the tester's kinds went by, each answered as the protocol says.
  EXPECT_GT(total(K::Read, S::Memory), 0u);
  EXPECT_GT(total(K::Read, S::Claimed), 0u);
  EXPECT_GT(total(K::ReadExclusive, S::Claimed) + total(K::Upgrade, S::Claimed), 0u);
  EXPECT_GT(total(K::Request, S::None), 0u);
  EXPECT_GT(total(K::RequestData, S::None), 0u);  // the tester's atomics and update-page stores
  // The node's own figures are the monitors' to the transaction: its misses served by another
  // cache, by its memory or L3 copy, and those that went to the MBP.
  const json st = h.stats();
  const std::string node = "system.node" + std::to_string(kNode) + ".node.";
  EXPECT_EQ(total(K::Read, S::Cache) + total(K::ReadExclusive, S::Cache), stat(st, node + "cache_to_cache"));
  EXPECT_EQ(total(K::Read, S::Memory) + total(K::ReadExclusive, S::Memory) + total(K::ReadUncached, S::Memory),
            stat(st, node + "local_memory") + stat(st, node + "l3_hits"));
  // Every bus phase the node's processors paid is one the monitors passed on; the rest of the
  // node's transactions are its MBP's (write-backs of evicted L3 pages, flushes of local copies).
  uint64_t paid = 0;
  for (auto& m : mon)
    for (const auto& [key, n] : m->seen)
      if (key.second != S::Claimed) paid += n;
  const uint64_t bus = stat(st, "system.node" + std::to_string(kNode) + ".bus.transactions");
  EXPECT_LE(paid, bus);
  EXPECT_LE(bus - paid, stat(st, "system.node" + std::to_string(kNode) + ".l3.block_writebacks") +
                            stat(st, "system.node" + std::to_string(kNode) + ".bus.mbp_snoops"));
  // The module tree: each processor's initiator, the bus's target.
  for (uint32_t p = 0; p < s.procs(); ++p)
    EXPECT_NE(sc_core::sc_find_object(("system.node0.proc" + std::to_string(p) + ".bus").c_str()), nullptr);
  EXPECT_NE(sc_core::sc_find_object("system.node0.bus.socket"), nullptr);
}

json bus_script_config(const json& steps) {
  return {{"network", {{"radix", 4}, {"levels", 1}}}, {"workload", {{"kind", "mbp_script"}, {"mbp_script", steps}}}};
}
json step(int node, int proc, double at_ns, const std::string& op, uint64_t addr) {
  return {{"node", node}, {"proc", proc}, {"at_ns", at_ns}, {"op", op}, {"addr", addr}};
}

// The zero-load local latencies of tests/unit/mbp_system_test.cpp (a first load 515 ns, a load
// of the node's own memory 2000 + 5 + 50 + 20 + 80 + 40 ns), with a monitor adding 1 us to each
// transaction of processor 0 of node 0: its two loads, one bus transaction each, are 1 us
// later; processor 1's identical load (once its TLB holds the page) is not.
TEST(ForeignBus, TheDelayAModuleInThePathAddsIsPaid) {
  UserBusMonitor slow("slow_path");
  slow.extra = sc_core::sc_time(1, sc_core::SC_US);
  const json steps = {step(0, 0, 0, "load", 0x0), step(0, 0, 2000, "load", 0x20), step(0, 1, 4000, "load", 0x40),
                      step(0, 1, 6000, "load", 0x60)};
  test::MbpHarness h(Config::from_json(schema(), bus_script_config(steps), "test.json"), 1, [&](mbp::System& s) {
    s.use_bus_path(0, 0, slow.in);
    slow.out.bind(s.bus_socket(0));
  });
  h.run();
  ASSERT_TRUE(h.workload().done()) << h.sys().failure();
  const json st = h.summary()["steps"];
  EXPECT_DOUBLE_EQ(st[0]["done_ns"].get<double>(), 515 + 1000);
  EXPECT_DOUBLE_EQ(st[1]["done_ns"].get<double>(), 2000 + 5 + 50 + 1000 + 20 + 80 + 40);
  EXPECT_DOUBLE_EQ(st[3]["done_ns"].get<double>(), 6000 + 5 + 50 + 20 + 80 + 40);  // (its TLB warm since step 2)
  EXPECT_EQ(slow.count(BusOp::Kind::Read, BusOp::Supplier::Memory), 2u);
}

// A transaction never starts before the present. Processor 0 of node 0 loads a block while
// processor 1's miss on it is pending: its first attempt pays the P-TLB refill (200 ns) and the
// L1 and L2 lookups (5 + 50 ns), the MBP claims the read, and the processor waits for global
// time to reach its clock (3205 ns). By then processor 1 holds the block, and the retried load
// is served by its cache from 3205 ns on. Before the node bus was a socket, the retry's bus
// transaction started at 3005 ns, in the past, dropping the TLB refill (done at 3225 ns).
TEST(ForeignBus, ARetriedMissStartsItsBusTransactionNoEarlierThanThePresent) {
  const json steps = {step(1, 0, 0, "store", 0x1000), step(0, 1, 2000, "load", 0x1000), step(0, 0, 2950, "load", 0x1000)};
  test::MbpHarness h(Config::from_json(schema(), bus_script_config(steps), "test.json"), 1);
  h.run();
  ASSERT_TRUE(h.workload().done()) << h.sys().failure();
  const json st = h.summary()["steps"];
  EXPECT_DOUBLE_EQ(st[1]["done_ns"].get<double>(), 3185);  // processor 1's remote miss
  const double done = st[2]["done_ns"].get<double>();
  EXPECT_GE(done, 2950 + 200 + 5 + 50 + 20 + 40) << "the transfer (address and data phases) began before the retry";
  EXPECT_DOUBLE_EQ(done, 3275);  // 3205, then the cache-to-cache transfer
  EXPECT_EQ(h.summary()["served_in_node"], 2);
}

// A user's bus master on the bus socket beside the processors: a Read of a home block gets the
// home memory's bytes; what the bus cannot take gets the base protocol's errors.
struct UserBusMaster : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<UserBusMaster> socket{"socket"};
  explicit UserBusMaster(sc_core::sc_module_name n) : sc_core::sc_module(n) {}
  tlm::tlm_response_status issue(tlm::tlm_command cmd, uint64_t addr, uint8_t* data, uint32_t len, BusOp* op, BusOp::Supplier* got = nullptr) {
    tlm::tlm_generic_payload gp;
    gp.set_command(cmd);
    gp.set_address(addr);
    gp.set_data_ptr(data);
    gp.set_data_length(len);
    gp.set_streaming_width(len);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    if (op) gp.set_extension(op);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    socket->b_transport(gp, delay);
    if (op) {
      if (got) *got = op->supplier;
      gp.clear_extension(op);
    }
    return gp.get_response_status();
  }
};

TEST(ForeignBus, AUsersBusMasterReadsTheHomeMemoryAndMalformedTransactionsGetErrors) {
  UserBusMaster master("user_master");
  const json steps = json::array({step(2, 0, 0, "store", 0x1000)});  // (not {x}: clang reads a one-element list as a copy of x)
  test::MbpHarness h(Config::from_json(schema(), bus_script_config(steps), "test.json"), 1,
                     [&](mbp::System& s) { master.socket.bind(s.bus_socket(2)); });
  h.run();
  mbp::System& s = h.sys();
  ASSERT_TRUE(h.workload().done()) << s.failure();
  const uint64_t p = s.node_physical(2, 0x1000);
  ASSERT_NE(p, ~0ull);
  std::array<uint8_t, 256> block{};
  std::array<uint8_t, 256> home{};
  const uint32_t bb = s.node_config().block_bytes;
  // The processor's store sits in its L2 (M): the Read takes it from the cache, and the home's
  // memory holds it afterwards.
  BusOp op;
  op.kind = BusOp::Kind::Read;
  BusOp::Supplier got = BusOp::Supplier::None;
  EXPECT_EQ(master.issue(tlm::TLM_READ_COMMAND, p, block.data(), bb, &op, &got), tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(got, BusOp::Supplier::Cache);
  s.read_home(0x1000, home.data(), bb);
  EXPECT_EQ(std::memcmp(block.data(), home.data(), bb), 0);
  EXPECT_EQ(op.granted, 1u) << "S: the processor keeps its copy";
  // No extension; the command does not fit the kind; an address outside the node's frames; not
  // a block; a burst.
  EXPECT_EQ(master.issue(tlm::TLM_READ_COMMAND, p, block.data(), bb, nullptr), tlm::TLM_COMMAND_ERROR_RESPONSE);
  EXPECT_EQ(master.issue(tlm::TLM_WRITE_COMMAND, p, block.data(), bb, &op), tlm::TLM_COMMAND_ERROR_RESPONSE);
  EXPECT_EQ(master.issue(tlm::TLM_READ_COMMAND, 0x7fff0000, block.data(), bb, &op), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(master.issue(tlm::TLM_READ_COMMAND, p + 4, block.data(), bb, &op), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(master.issue(tlm::TLM_READ_COMMAND, p, block.data(), 2 * bb, &op), tlm::TLM_BURST_ERROR_RESPONSE);
  op.kind = BusOp::Kind::Request;  // a request without its message
  EXPECT_EQ(master.issue(tlm::TLM_IGNORE_COMMAND, p, nullptr, bb, &op), tlm::TLM_COMMAND_ERROR_RESPONSE);
}

// A path that answers with an error stops the run (exit status 2 under mbpsim run), naming the
// node, the processor and the transaction.
struct BrokenBus : sc_core::sc_module {
  tlm_utils::simple_target_socket<BrokenBus> socket{"socket"};
  explicit BrokenBus(sc_core::sc_module_name n) : sc_core::sc_module(n) { socket.register_b_transport(this, &BrokenBus::b_transport); }
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time&) { gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE); }
};

TEST(ForeignBus, APathThatAnswersAnErrorFailsTheRunNamingNodeProcessorAndTransaction) {
  BrokenBus broken("broken_bus");
  const json steps = json::array({step(1, 1, 0, "load", 0x20)});  // (not {x}: clang reads a one-element list as a copy of x)
  test::MbpHarness h(Config::from_json(schema(), bus_script_config(steps), "test.json"), 1,
                     [&](mbp::System& s) { s.use_bus_path(1, 1, broken.socket); });
  h.run();
  EXPECT_FALSE(h.workload().done());
  EXPECT_NE(h.sys().failure().find("node 1 processor 1: the node bus answered TLM_ADDRESS_ERROR_RESPONSE to a Read of 0x"), std::string::npos)
      << h.sys().failure();
}

// A module in the path that waits: the machine's processors issue their transactions from its
// SC_METHOD, so the wait is SystemC's error, thrown out of sc_start, not a hang or a crash.
struct WaitingPath : sc_core::sc_module {
  tlm_utils::simple_target_socket<WaitingPath> in{"in"};
  tlm_utils::simple_initiator_socket<WaitingPath> out{"out"};
  explicit WaitingPath(sc_core::sc_module_name n) : sc_core::sc_module(n) { in.register_b_transport(this, &WaitingPath::b_transport); }
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    wait(delay);
    delay = sc_core::SC_ZERO_TIME;
    out->b_transport(gp, delay);
  }
};

TEST(ForeignBus, AModuleThatWaitsInThePathGetsSystemCsError) {
  WaitingPath waits("waiting_path");
  const json steps = json::array({step(0, 0, 0, "load", 0x20)});  // (not {x}: clang reads a one-element list as a copy of x)
  test::MbpHarness h(Config::from_json(schema(), bus_script_config(steps), "test.json"), 1, [&](mbp::System& s) {
    s.use_bus_path(0, 0, waits.in);
    waits.out.bind(s.bus_socket(0));
  });
  std::string what;
  try {
    h.run();
  } catch (const sc_core::sc_report& r) {
    what = r.what();
  }
  EXPECT_NE(what.find("wait() is only allowed in SC_THREADs and SC_CTHREADs"), std::string::npos) << what;
  EXPECT_FALSE(h.workload().done());
}

TEST(ForeignBus, APathIsBoundOnlyBeforeTheRunAndOnlyToAProcessorTheMachineHas) {
  BrokenBus late("late_bus");
  const json steps = json::array({step(1, 0, 0, "load", 0x20)});  // (not {x}: clang reads a one-element list as a copy of x)
  test::MbpHarness h(Config::from_json(schema(), bus_script_config(steps), "test.json"), 1,
                     [&](mbp::System& s) { s.use_bus_path(2, 0, late.socket); });
  EXPECT_THROW(h.sys().use_bus_path(1, 0, late.socket), std::logic_error);
  EXPECT_THROW(h.sys().use_bus_path(1, 99, late.socket), std::out_of_range);
  EXPECT_THROW(h.sys().use_bus_path(99, 0, late.socket), std::out_of_range);
}

}  // namespace
}  // namespace mbpsim
