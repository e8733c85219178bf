// Network behaviour measured through whole (small) runs: each TEST is its own process.
#include <malloc.h>

#include <gtest/gtest.h>

#include <memory>

#include "models/core/footprint.h"
#include "models/core/stats.h"
#include "models/net/network.h"
#include "sim/runner.h"
#include "tests/test_util.h"

namespace mbpsim {
namespace {

using nlohmann::json;

struct ZeroLoadCase {
  int radix, levels, src, dst, flits, link, va, st, routing, ni, flit_bits, width;
};

class ZeroLoad : public ::testing::TestWithParam<ZeroLoadCase> {};

// A lone packet sees no contention, so its latency must equal the analytic value exactly:
// NI delay + injection link + per router (routing + VA + SA + ST + outgoing link) +
// serialisation of the remaining flits.
TEST_P(ZeroLoad, LatencyEqualsAnalyticValue) {
  const auto c = GetParam();
  json cfg = {{"network",
               {{"radix", c.radix}, {"levels", c.levels}, {"link_latency", c.link},
                {"va_delay", c.va}, {"st_delay", c.st}, {"routing_delay", c.routing},
                {"ni_delay", c.ni}, {"flit_bits", c.flit_bits}, {"link_width_bits", c.width}}},
              {"workload",
               {{"kind", "script"},
                {"script", {{{"cycle", 5}, {"src", c.src}, {"dests", {c.dst}}, {"flits", c.flits}}}},
                {"measure_cycles", 100}}}};
  json st = test::run_in_process(cfg, "zeroload");
  net::TreeTopology t(c.radix, c.levels);
  const int routers = t.routers_on_path(c.src, c.dst);
  const int fc = (c.flit_bits + c.width - 1) / c.width;
  const int expected = c.ni + c.link + routers * (c.routing + c.va + 1 + c.st + c.link) +
                       (c.flits - 1) * fc;
  const auto& h = st["stats"]["system"]["net"]["latency"]["unicast"];
  ASSERT_EQ(h["count"], 1);
  EXPECT_EQ(h["min"].get<int>(), expected) << "routers " << routers;
}

INSTANTIATE_TEST_SUITE_P(
    Paths, ZeroLoad,
    ::testing::Values(ZeroLoadCase{4, 3, 0, 0, 1, 1, 1, 1, 0, 1, 64, 64},   // 1 router: 6
                      ZeroLoadCase{4, 3, 0, 5, 1, 1, 1, 1, 0, 1, 64, 64},   // 3 routers: 14
                      ZeroLoadCase{4, 3, 0, 63, 1, 1, 1, 1, 0, 1, 64, 64},  // 5 routers: 22
                      ZeroLoadCase{4, 3, 7, 50, 6, 1, 1, 1, 0, 1, 64, 64},  // wormhole tail
                      ZeroLoadCase{4, 3, 7, 50, 4, 3, 2, 0, 1, 2, 64, 64},
                      ZeroLoadCase{4, 3, 7, 50, 4, 2, 1, 1, 0, 1, 128, 32},  // 4 link cycles/flit
                      ZeroLoadCase{2, 5, 0, 31, 2, 1, 1, 1, 0, 1, 64, 64},
                      ZeroLoadCase{8, 2, 3, 60, 1, 4, 1, 1, 1, 0, 64, 64},
                      ZeroLoadCase{4, 6, 0, 4095, 1, 1, 1, 1, 0, 1, 64, 64}),
    [](const ::testing::TestParamInfo<ZeroLoadCase>& i) {
      const auto& c = i.param;
      return "k" + std::to_string(c.radix) + "n" + std::to_string(c.levels) + "_" +
             std::to_string(c.src) + "to" + std::to_string(c.dst) + "_f" + std::to_string(c.flits) +
             "_case" + std::to_string(i.index);
    });

json fig27(bool combining) {
  return json{{"network", {{"radix", 4}, {"levels", 2}, {"combining", combining}}},
              {"workload",
               {{"kind", "script"},
                {"script", {{{"cycle", 0}, {"src", 4}, {"dests", {5, 6, 8, 9, 11}}, {"ack", true}}}},
                {"measure_cycles", 50}}}};
}

// Figures 2.7 and 2.8: exactly A, B, H, I, J, K receive; J answers with a dummy ack; T3
// combines four acks, T2 combines A, B and T0's; S receives exactly one acknowledgement.
TEST(Multicast, Figure27And28WithCombining) {
  json st = test::run_in_process(fig27(true), "fig27");
  const auto& s = st["summary"];
  EXPECT_EQ(s["multicast_receivers"], 6);
  EXPECT_EQ(s["multicast_receiver_nodes"], json({5, 6, 8, 9, 10, 11}));
  EXPECT_EQ(s["dummy_acks"], 1);
  EXPECT_EQ(s["dropped_no_copy"], 1);
  EXPECT_EQ(s["acks_at_source"], 1);
  EXPECT_EQ(s["receivers_acknowledged"], 6);
  EXPECT_EQ(s["receivers_holding_copy"], 5);
  const auto& net = st["stats"]["system"]["net"];
  // Router names: router_<height>_<pos>; T0 = router_0_0, T2 = router_1_1, T3 = router_1_2.
  EXPECT_EQ(net["router_1_1"]["combining"]["acks_in"], 3);   // A, B and T0
  EXPECT_EQ(net["router_1_1"]["combining"]["acks_out"], 1);  // to S
  EXPECT_EQ(net["router_1_2"]["combining"]["acks_in"], 4);   // H, I, J, K
  EXPECT_EQ(net["router_0_0"]["combining"]["acks_in"], 1);   // from T3
  EXPECT_EQ(net["router_1_0"]["combining"]["allocated"], 0);  // T1 is never involved
  EXPECT_EQ(net["router_1_3"]["combining"]["allocated"], 0);
  // T0 forwards in one direction only (to T3); T3 broadcasts to its four children.
  EXPECT_EQ(net["router_0_0"]["port2"]["flits"], 1);  // the multicast, down to T3
  EXPECT_EQ(net["router_0_0"]["port1"]["flits"], 1);  // T0's combined ack, back to T2
  EXPECT_EQ(net["router_0_0"]["port0"]["flits"], 0);
  EXPECT_EQ(net["router_0_0"]["port3"]["flits"], 0);
  for (int c = 0; c < 4; ++c) EXPECT_EQ(net["router_1_2"]["port" + std::to_string(c)]["flits"], 1);
}

TEST(Multicast, Figure27WithoutCombiningEveryAckReachesTheSource) {
  json st = test::run_in_process(fig27(false), "fig27e2e");
  EXPECT_EQ(st["summary"]["multicast_receivers"], 6);
  EXPECT_EQ(st["summary"]["dummy_acks"], 1);
  EXPECT_EQ(st["summary"]["acks_at_source"], 6);
  EXPECT_EQ(st["summary"]["receivers_acknowledged"], 6);
  EXPECT_EQ(st["stats"]["system"]["net"]["router_1_1"]["combining"]["acks_in"], 0);
}

// A one-entry combining table cannot hold every multicast in flight: the others go on
// uncombined (waiting for an entry could deadlock), their acks are merged further up or at
// the source, and every transaction still completes with every receiver accounted for.
TEST(Multicast, FullCombiningTableFallsBackAndCompletes) {
  json cfg = {{"network", {{"radix", 4}, {"levels", 2}, {"combining_entries", 1}}},
              {"workload",
               {{"pattern", "multicast"}, {"injection_rate", 0.003}, {"packet_flits", 2},
                {"multicast_fraction", 1.0}, {"multicast_fanout", 3}, {"inject_during_drain", false},
                {"warmup_cycles", 0}, {"measure_cycles", 5000}, {"drain_cycles", 50000}}}};
  json st = test::run_in_process(cfg, "combfull");
  const auto& net = st["stats"]["system"]["net"];
  uint64_t bypassed = 0;
  for (auto it = net.begin(); it != net.end(); ++it)
    if (it.key().rfind("router_", 0) == 0) bypassed += it.value()["combining"]["bypassed"].get<uint64_t>();
  EXPECT_GT(bypassed, 0u);
  EXPECT_FALSE(st["summary"]["saturated"].get<bool>());
  EXPECT_EQ(net["latency"]["ack"]["count"], st["summary"]["packets_measured"]);
  // Uncombined branches mean more than one ack per multicast reaches some sources.
  EXPECT_GT(net["multicast"]["acks_at_source"].get<uint64_t>(), net["multicast"]["sent"].get<uint64_t>());
}

// Under multicast-heavy load each multicast yields exactly one ack at its source with
// combining, and one per reached node without it; every multicast completes.
json ack_load(bool combining) {
  return {{"network", {{"radix", 4}, {"levels", 3}, {"combining", combining}}},
          {"workload",
           {{"pattern", "multicast"}, {"injection_rate", 0.01}, {"multicast_fraction", 0.5},
            {"multicast_fanout", 5}, {"warmup_cycles", 0}, {"measure_cycles", 5000},
            {"inject_during_drain", false}, {"drain_cycles", 100000}}}};
}

TEST(Multicast, AckAccountingUnderLoad) {
  json st = test::run_in_process(ack_load(true), "ackload");
  const auto& m = st["stats"]["system"]["net"]["multicast"];
  EXPECT_FALSE(st["summary"]["saturated"].get<bool>());
  EXPECT_GT(m["sent"].get<int>(), 100);
  EXPECT_EQ(m["completed"], m["sent"]);
  EXPECT_EQ(m["acks_at_source"], m["sent"]);  // exactly one combined ack per multicast
  EXPECT_EQ(m["acks_from_nodes"], m["deliveries"]);
  EXPECT_GT(m["dummy_acks"].get<int>(), 0);  // the bitmap's imprecision reaches extra nodes
}

TEST(Multicast, AckAccountingUnderLoadEndToEnd) {
  json st = test::run_in_process(ack_load(false), "ackloade2e");
  const auto& m = st["stats"]["system"]["net"]["multicast"];
  EXPECT_GT(m["sent"].get<int>(), 100);
  EXPECT_EQ(m["completed"], m["sent"]);
  EXPECT_EQ(m["acks_at_source"], m["deliveries"]);  // one ack per reached node
}

// Multicast-heavy overload with 4-flit packets and small buffers once deadlocked within a few
// thousand cycles (a multicast worm's downward branches waiting on its upward branch while
// downward traffic waited for them). Virtual cut-through and all-or-nothing VC allocation for
// multicasts keep the network moving: the watchdog must not fire.
// (Without virtual cut-through every case below with multicast_fraction >= 0.5 stops.)
class MulticastOverload : public ::testing::TestWithParam<std::tuple<int, int, double>> {};

TEST_P(MulticastOverload, NoDeadlock) {
  const auto [flits, entries, fraction] = GetParam();
  json cfg = {{"network", {{"radix", 4}, {"levels", 3}, {"buffer_depth", flits},
                           {"combining_entries", entries}, {"watchdog_cycles", 3000}}},
              {"workload",
               {{"pattern", "multicast"}, {"injection_rate", 0.1}, {"packet_flits", flits},
                {"multicast_fraction", fraction}, {"multicast_fanout", 6}, {"warmup_cycles", 1000},
                {"measure_cycles", 12000}, {"drain_cycles", 2000}}}};
  int status = -1;
  json st = test::run_in_process(cfg, "mcoverload", &status);
  // Overloaded on purpose: the run ends at workload.drain_cycles with packets in flight (exit
  // status 3, "stopped by its limit"), never by the watchdog (2: a deadlock).
  ASSERT_EQ(status, 3) << "watchdog fired: deadlock";
  EXPECT_EQ(st["run"]["stopped_by"], "workload.drain_cycles");
  EXPECT_TRUE(st["summary"]["saturated"].get<bool>());
  EXPECT_GT(st["summary"]["accepted_rate"].get<double>(), 0.15);
}

INSTANTIATE_TEST_SUITE_P(Buffers, MulticastOverload,
                         ::testing::Values(std::make_tuple(4, 64, 0.5), std::make_tuple(4, 64, 1.0),
                                           std::make_tuple(8, 64, 1.0), std::make_tuple(4, 1, 1.0),
                                           std::make_tuple(8, 2, 0.25)));

// A client that never answers an ack-requesting multicast leaves a transaction open forever:
// the watchdog stops the run and the dump names the packet.
struct SilentClient : net::NetClient {
  void on_packet(uint32_t, net::Packet&, uint64_t) override {}
};

// Starts the network and injects one ack-requesting multicast from node 4.
void start_with_multicast(net::Network& n, net::NetClient& client, std::vector<uint32_t> dests) {
  n.set_client(&client);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  n.start();
  net::Packet* p = n.new_packet();
  p->src = 4;
  p->ack_req = true;
  n.inject_multicast(p, dests);
}

TEST(Network, WatchdogFiresOnLostProgress) {
  net::NetConfig nc;
  nc.watchdog_cycles = 500;
  Stats stats;
  net::Network n("net", nc, stats);
  SilentClient client;
  start_with_multicast(n, client, {5, 9});
  sc_core::sc_start(n.period() * 2000.0);
  EXPECT_NE(n.failure().find("network watchdog"), std::string::npos) << n.failure();
  EXPECT_EQ(n.in_flight(), 1u);
  EXPECT_NE(n.dump_in_flight(5).find("multicast txn 1 from node 4"), std::string::npos)
      << n.dump_in_flight(5);
}

// A receiver that acknowledges twice breaks the ack accounting. T3 completes its entry with
// the first four acks; the fifth finds no entry, travels on uncombined, and the source, whose
// transaction is already complete, stops the run as a simulated failure.
struct DoubleAcker : net::NetClient {
  net::Network* net = nullptr;
  void on_packet(uint32_t node, net::Packet& p, uint64_t) override {
    net->send_ack(node, p, true);
    if (node == 10) net->send_ack(node, p, true);
  }
};

TEST(Network, DuplicateAckBreaksInvariant) {
  net::NetConfig nc;
  Stats stats;
  net::Network n("net", nc, stats);
  DoubleAcker client;
  client.net = &n;
  start_with_multicast(n, client, {5, 6, 8, 9, 11});
  sc_core::sc_start(n.period() * 500.0);
  EXPECT_NE(n.failure().find("invariant broken"), std::string::npos) << n.failure();
  EXPECT_NE(n.failure().find("transaction 1"), std::string::npos) << n.failure();
}

// Packets injected from a SystemC thread at arbitrary times enter at the next cycle edge.
struct Recorder : net::NetClient {
  std::vector<std::pair<uint32_t, uint64_t>> got;
  void on_packet(uint32_t node, net::Packet& p, uint64_t now) override { got.push_back({node, now}); }
};

SC_MODULE(Injector) {
  net::Network* net;
  SC_CTOR(Injector) { SC_THREAD(run); }
  void run() {
    wait(sc_core::sc_time(25, sc_core::SC_NS));  // 2.5 cycles at 100 MHz
    net::Packet* p = net->new_packet();
    p->src = 0;
    p->dst = 15;
    net->inject(p);
  }
};

TEST(Network, ExternalInjectionFromSystemCThread) {
  net::NetConfig nc;
  Stats stats;
  net::Network n("net", nc, stats);
  Recorder rec;
  n.set_client(&rec);
  Injector inj("inj");
  inj.net = &n;
  n.start();
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_US));
  ASSERT_EQ(rec.got.size(), 1u);
  EXPECT_EQ(rec.got[0].first, 15u);
  // Created at cycle 3 (the edge after 25 ns); 3 routers: 1 + 1 + 3 * 4 = 14 cycles.
  EXPECT_EQ(rec.got[0].second, 3u + 14u);
}

// A node that always has replies queued still injects its own requests: the interface takes
// the oldest ready head, so a request is not starved behind a stream of younger replies (a
// multicast invalidation waited 2 ms at a hot home before this was fixed).
struct ClassRecorder : net::NetClient {
  int64_t request_at = -1;
  uint64_t replies = 0;
  void on_packet(uint32_t, net::Packet& p, uint64_t now) override {
    if (p.cls == net::kRequest) request_at = static_cast<int64_t>(now);
    else ++replies;
  }
};

SC_MODULE(ReplyStream) {
  net::Network* net;
  SC_CTOR(ReplyStream) { SC_THREAD(run); }
  void run() {
    auto make = [&](uint8_t cls) {
      net::Packet* p = net->new_packet();
      p->src = 0;
      p->dst = 5;
      p->cls = cls;
      p->size_flits = 6;
      net->inject(p);
    };
    make(net::kReply);
    wait(sc_core::sc_time(10, sc_core::SC_NS));
    make(net::kRequest);  // one request, younger than the first reply, older than the rest
    for (int i = 0; i < 2000; ++i) {  // a reply every cycle: more than the link can carry
      make(net::kReply);
      wait(sc_core::sc_time(10, sc_core::SC_NS));
    }
  }
};

TEST(Network, RequestsAreNotStarvedBehindReplies) {
  net::NetConfig nc;
  Stats stats;
  net::Network n("net", nc, stats);
  ClassRecorder rec;
  n.set_client(&rec);
  ReplyStream rs("rs");
  rs.net = &n;
  n.start();
  sc_core::sc_start(sc_core::sc_time(200, sc_core::SC_US));
  ASSERT_GE(rec.request_at, 0) << "the request was never delivered";
  // Behind at most the two replies ahead of it (6 flits each) plus the trip: well under 100
  // cycles. With strict class priority it left only after all 2001 replies (12,000 cycles).
  EXPECT_LT(rec.request_at, 100);
  EXPECT_EQ(rec.replies, 2001u);
}

// The memory forecast's network part is what the constructor allocates (glibc's count of heap
// and mapped bytes in use, before and after), for a tree large enough that the routers dominate: a
// change to a router's state that the forecast does not follow fails here.
TEST(Footprint, TheNetworksPredictionIsWhatItsConstructorAllocates) {
#ifdef MBPSIM_TEST_ASAN
  GTEST_SKIP() << "AddressSanitizer's allocator keeps no glibc heap statistics (mallinfo2 reads 0)";
#endif
  for (int levels : {4, 5}) {
    SCOPED_TRACE("levels " + std::to_string(levels));
    net::NetConfig nc;
    nc.levels = levels;
    MemoryForecast f;
    net::Network::footprint(nc, f);
    uint64_t predicted = 0;
    for (const auto& i : f.items())
      if (i.what == "routers" || i.what == "network interfaces") predicted += i.bytes;
    Stats stats;
    // Heap chunks and, for blocks of 128 KiB and more, the ones glibc maps on their own (the
    // interfaces' array at 1,024 nodes).
    const auto in_use = [] { return mallinfo2().uordblks + mallinfo2().hblkhd; };
    const size_t before = in_use();
    auto n = std::make_unique<net::Network>(("net" + std::to_string(levels)).c_str(), nc, stats);
    const double made = static_cast<double>(in_use() - before);
    EXPECT_NEAR(static_cast<double>(predicted) / made, 1.0, 0.10) << "predicted " << predicted << ", allocated " << made;
  }
}

}  // namespace
}  // namespace mbpsim
