// MBP2 datagrams and TCP under faults (8.3.3; RFC 793, 5681, 6298): UDP's echoes and streams
// under loss, TCP's acknowledgements, retransmission, windows and give-up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "models/mbcf/atomic.h"
#include "models/mbp2/mbp2_cards.h"
#include "sim/runner.h"
#include "tests/test_util.h"
#include "tests/integration/mbp2_rig.h"

namespace mbpsim::mbp2 {
namespace {

// UDP under loss: an echo whose datagram or answer was lost is tried again after
// workload.timeout_us, and a stream ends once nothing arrives for that long after the sender
// is done, with the datagrams lost on the wire counted. TCP under faults is refused up front:
// its retransmission is not modelled, so one lost segment would stall the stream.
TEST(Mbp2Msg, UdpUnderLossRetriesItsEchoesAndCountsWhatTheStreamLost) {
  const auto s = stats_json("mbp2c-pci.json", "--set workload.kind=datagram --set ether.loss=0.05 --set ether.duplicate=0.05"
                                              " --set 'workload.sizes=[4,256]' --set workload.transfers=256 --set workload.iterations=20");
  const auto& sum = s["summary"];
  ASSERT_TRUE(sum["finished"].get<bool>());
  EXPECT_EQ(sum["mismatched_datagrams"].get<uint64_t>(), 0u);
  EXPECT_GT(sum["echo_timeouts"].get<uint64_t>(), 0u);
  ASSERT_EQ(sum["points"].size(), 4u);
  uint64_t lost = 0;
  for (int i : {1, 3}) {
    const auto& p = sum["points"][i];
    lost += p["lost"].get<uint64_t>();
    // Every datagram is taken, dropped by the NIC or lost on the wire, and the rate counts the
    // ones taken up to the last (not the receiver's final wait).
    EXPECT_LE(p["lost"].get<uint64_t>() + p["dropped"].get<uint64_t>(), 256u);
    EXPECT_GT(p["value"].get<double>(), 1.0);
  }
  EXPECT_GT(lost, 0u);
  // The round trips are those of the tries that came back: near the lossless figure.
  const auto clean = points("mbp2c-pci.json", "--set workload.kind=datagram --set 'workload.sizes=[4]' --set workload.transfers=16 --set workload.iterations=20");
  EXPECT_NEAR(sum["points"][0]["value"].get<double>(), clean[0]["value"].get<double>(), 0.2 * clean[0]["value"].get<double>());
}

// TCP on the PME recovers what the wire loses, reorders or alters: every segment of the stream
// is taken once, in order (the workload checks each payload and would count a duplicate or a
// stranger), nothing is lost, and the sender's NIC sent segments again.
TEST(Mbp2Msg, TcpUnderLossReorderingAndTamperingDeliversEverySegmentOnceInOrder) {
  for (const char* fault : {"ether.loss=0.02", "ether.reorder=0.02", "ether.tamper=0.02"}) {
    SCOPED_TRACE(fault);
    const auto s = stats_json("mbp2c-pci.json", std::string("--set workload.kind=datagram --set workload.protocol=tcp --set ") + fault +
                                                    " --set 'workload.sizes=[1024]' --set workload.transfers=256 --set workload.iterations=4");
    const auto& sum = s["summary"];
    ASSERT_TRUE(sum["finished"].get<bool>());
    EXPECT_EQ(sum["mismatched_datagrams"].get<uint64_t>(), 0u);
    EXPECT_EQ(sum["duplicate_datagrams"].get<uint64_t>(), 0u);
    EXPECT_EQ(sum["stray_datagrams"].get<uint64_t>(), 0u);
    ASSERT_EQ(sum["points"].size(), 2u);
    const auto& p = sum["points"][1];
    EXPECT_EQ(p["lost"].get<uint64_t>(), 0u);
    EXPECT_GT(p["retransmitted"].get<uint64_t>(), 0u);
    const auto& ip = s["stats"]["system"]["host1"]["nic"]["ip"];
    EXPECT_EQ(ip["rx_delivered"].get<uint64_t>(), 6u + 256u);  // 6 echoes, 256 streamed: each once
    EXPECT_GT(s["stats"]["system"]["host0"]["nic"]["ip"]["tcp_retransmits"].get<uint64_t>(), 0u);
  }
}

// A TCP connection from node 0's task 1 (port 4000) to node 1's (port 80), node 1's ring of
// `slots`; `spoil(k)` alters the k-th data frame to node 1 on the wire (its checksum then fails:
// a loss).
struct TcpRig {
  Rig r;
  uint32_t to_node1 = 0;
  std::vector<uint32_t> spoiled;
  explicit TcpRig(uint32_t slots = 8, const Mbp2Config& m = Mbp2Config{}) : r(m) {
    r.mbp2->nic(0).init_ring(1, kRing, 8, 2048);
    r.mbp2->nic(1).init_ring(1, kRing, slots, 2048);
    EXPECT_TRUE(r.mbp2->nic(0).connect_tcp(1, 4000, 1, 80, kRing, 1000, 7000));
    EXPECT_TRUE(r.mbp2->nic(1).connect_tcp(1, 80, 0, 4000, kRing, 7000, 1000));
    r.sys->ether().set_tap([this](uint32_t to, const std::vector<uint8_t>& f) {
      if (to != 1 || f.size() <= 14 + 40 + 4) return;  // (a data segment, not a bare ACK)
      if (std::find(spoiled.begin(), spoiled.end(), to_node1++) == spoiled.end()) return;
      const_cast<std::vector<uint8_t>&>(f)[f.size() - 1] ^= 0x5a;
    });
  }
  // Sends `n` segments of `len` bytes back to back; returns their payloads.
  std::vector<std::vector<uint8_t>> send(uint32_t n, uint32_t len) {
    std::vector<std::vector<uint8_t>> p;
    std::vector<Mbp2Nic::DatagramRequest> q;
    for (uint32_t i = 0; i < n; ++i) {
      p.push_back(put_payload(r, 256 * i, len, static_cast<uint8_t>(i + 1)));
      Mbp2Nic::DatagramRequest d = udp_to(80, 256 * i, len);
      d.proto = kIpProtoTcp;
      q.push_back(d);
    }
    send_all(r, q);
    return p;
  }
  // Takes what node 1's ring holds: true when it is exactly `want`, in order.
  ::testing::AssertionResult took(const std::vector<std::vector<uint8_t>>& want) {
    for (size_t i = 0; i < want.size(); ++i) {
      std::vector<uint8_t> got;
      if (!r.mbp2->nic(1).take(1, kRing, &got)) return ::testing::AssertionFailure() << "only " << i << " segments arrived";
      if (got != want[i]) return ::testing::AssertionFailure() << "segment " << i << " differs";
    }
    if (r.mbp2->nic(1).take(1, kRing, nullptr)) return ::testing::AssertionFailure() << "more segments than sent";
    return ::testing::AssertionSuccess();
  }
  uint64_t at(uint32_t node, const std::string& k) { return r.counter("system.host" + std::to_string(node) + ".nic.ip." + k); }
};

// The receiving PME acknowledges every second in-order segment at once, and a last odd one
// after mbp2.tcp_delack_us (40 ms); the acknowledged segments' images go back to the PGE.
TEST(Mbp2Tcp, EverySecondSegmentIsAcknowledgedAtOnceAndALastOneAfterTheDelay) {
  TcpRig t;
  const auto p = t.send(5, 200);
  t.r.run(5);
  EXPECT_EQ(t.at(1, "tcp_acks_sent"), 2u);
  EXPECT_EQ(t.r.mbp2->nic(0).tcp_unacked(4000, 1, 80), 200u);  // the fifth waits for the delayed ACK
  t.r.run(30);
  EXPECT_EQ(t.at(1, "tcp_acks_sent"), 2u);
  t.r.run(10);
  EXPECT_EQ(t.at(1, "tcp_acks_sent"), 3u);
  EXPECT_EQ(t.r.mbp2->nic(0).tcp_unacked(4000, 1, 80), 0u);
  EXPECT_TRUE(t.took(p));
  EXPECT_EQ(t.at(0, "tcp_retransmits"), 0u);
  // The sending PME built each segment's headers, the receiving one three ACKs.
  const double hdr = static_cast<double>(t.r.mbp2->nic(0).pme().instr_ps(t.r.mbp2->mbp2_config().ip_header_instr));
  EXPECT_NEAR(static_cast<double>(t.r.counter("system.host0.nic.pme.handler.tcp_output_ps")), 5 * hdr, 10.0);
  EXPECT_NEAR(static_cast<double>(t.r.counter("system.host1.nic.pme.handler.tcp_ack_ps")), 3 * hdr, 10.0);
}

// A segment lost on the wire: the receiver drops the ones behind it (no gaps kept) and answers
// each with a duplicate ACK; the third makes the sender go back to the lost one and send all
// from there (fast retransmit, no timeout), and every segment lands once, in order.
TEST(Mbp2Tcp, ALostSegmentIsResentOnThreeDuplicateAcksAndAllLandInOrder) {
  TcpRig t;
  t.spoiled = {1};
  const auto p = t.send(8, 200);
  t.r.run(50);  // far below the first timeout (1 s)
  EXPECT_TRUE(t.took(p));
  EXPECT_EQ(t.at(1, "rx_bad_checksum"), 1u);
  EXPECT_EQ(t.at(1, "rx_out_of_order"), 6u);
  EXPECT_GE(t.at(0, "tcp_dup_acks"), 3u);
  EXPECT_EQ(t.at(0, "tcp_fast_retransmits"), 1u);
  EXPECT_EQ(t.at(0, "tcp_timeouts"), 0u);
  EXPECT_EQ(t.at(0, "tcp_retransmits"), 7u);  // the lost one and the six dropped behind it
  EXPECT_EQ(t.r.mbp2->nic(0).tcp_unacked(4000, 1, 80), 0u);
}

// The last segment lost: no duplicate ACK comes, the retransmission timer does (RFC 6298: the
// RTT sampled from the first two sets it to its floor, mbp2.tcp_rto_min_us = 200 ms).
TEST(Mbp2Tcp, ALostLastSegmentIsResentWhenTheTimerExpires) {
  TcpRig t;
  t.spoiled = {2};
  const auto p = t.send(3, 200);
  t.r.run(190);
  EXPECT_EQ(t.at(1, "rx_delivered"), 2u);
  EXPECT_EQ(t.at(0, "tcp_timeouts"), 0u);
  t.r.run(20);
  EXPECT_EQ(t.at(0, "tcp_timeouts"), 1u);
  EXPECT_EQ(t.at(0, "tcp_fast_retransmits"), 0u);
  EXPECT_TRUE(t.took(p));
}

// A full ring: the receiver drops what has no slot and advertises a shut window; the sender
// stops, probes when the persist timer expires, and goes on once the task has taken entries.
TEST(Mbp2Tcp, AShutWindowIsProbedAndTheStreamGoesOnWhenTheTaskTakes) {
  TcpRig t(2);
  const auto p = t.send(5, 200);
  t.r.run(50);
  EXPECT_EQ(t.at(1, "rx_delivered"), 2u);
  EXPECT_GE(t.at(1, "rx_ring_full"), 1u);
  EXPECT_GT(t.r.mbp2->nic(0).tcp_unacked(4000, 1, 80), 0u);
  std::vector<std::vector<uint8_t>> got(2);
  ASSERT_TRUE(t.r.mbp2->nic(1).take(1, kRing, &got[0]));
  ASSERT_TRUE(t.r.mbp2->nic(1).take(1, kRing, &got[1]));
  EXPECT_EQ(got[0], p[0]);
  EXPECT_EQ(got[1], p[1]);
  std::vector<std::vector<uint8_t>> rest(p.begin() + 2, p.end());
  for (int i = 0; i < 40 && t.at(1, "rx_delivered") < 5; ++i) {
    t.r.run(100);
    std::vector<uint8_t> g;
    while (t.r.mbp2->nic(1).take(1, kRing, &g)) got.push_back(g);
  }
  EXPECT_GE(t.at(0, "tcp_window_probes"), 1u);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got, p);
  t.r.run(50);  // (the last one's delayed ACK)
  EXPECT_EQ(t.r.mbp2->nic(0).tcp_unacked(4000, 1, 80), 0u);
}

// A peer that never answers: after mbp2.tcp_max_retries timeouts (each twice the last) the
// connection is given up and its images go back to the PGE, so other traffic is not starved.
TEST(Mbp2Tcp, AConnectionWhosePeerNeverAnswersIsGivenUpAndItsImagesFreed) {
  Mbp2Config m;
  m.tcp_max_retries = 2;
  TcpRig t(8, m);
  for (uint32_t i = 0; i < 64; ++i) t.spoiled.push_back(i);
  t.send(3, 200);
  t.r.run(6000);  // timeouts at 1, 3 and 7 s (1 s before an RTT sample, doubled each time)
  EXPECT_EQ(t.at(0, "tcp_aborts"), 0u);
  EXPECT_GT(t.r.mbp2->nic(0).tcp_unacked(4000, 1, 80), 0u);
  t.r.run(2000);
  EXPECT_EQ(t.at(0, "tcp_timeouts"), 3u);
  EXPECT_EQ(t.at(0, "tcp_aborts"), 1u);
  EXPECT_EQ(t.r.mbp2->nic(0).tcp_unacked(4000, 1, 80), 0u);
  EXPECT_EQ(t.at(1, "rx_delivered"), 0u);
  // The images are free: a UDP datagram goes out at once.
  t.r.mbp2->nic(1).init_ring(2, 0x10000, 2, 512);
  ASSERT_TRUE(t.r.mbp2->nic(1).bind_udp(2, 9, 0x10000));
  t.spoiled.clear();
  put_payload(t.r, 0, 64, 9);
  ASSERT_TRUE(t.r.mbp2->nic(0).send_datagram(1, udp_to(9, 0, 64), [] {}));
  t.r.run(5);
  EXPECT_EQ(t.at(1, "rx_delivered"), 1u);
}

// The datagram workload: UDP and TCP echo and stream between user tasks on both MBP2 configs,
// every payload checked; on MBCF/Ether's conventional NIC it is a config error.
TEST(Mbp2Msg, TheDatagramWorkloadChecksEveryPayloadOnBothConfigs) {
  for (const char* cfg : {"mbp2p-ss20.json", "mbp2c-pci.json"})
    for (const char* proto : {"udp", "tcp"}) {
      const auto s = stats_json(cfg, std::string("--set workload.kind=datagram --set workload.protocol=") + proto +
                                         " --set 'workload.sizes=[4,1024]' --set workload.transfers=64 --set workload.iterations=4");
      const auto& sum = s["summary"];
      ASSERT_TRUE(sum["finished"].get<bool>()) << cfg << " " << proto;
      EXPECT_EQ(sum["mismatched_datagrams"].get<uint64_t>(), 0u);
      EXPECT_EQ(sum["checked_bytes"].get<uint64_t>(), 2u * (4 + 1024) * (4 + 2) + 64u * (4 + 1024));
      ASSERT_EQ(sum["points"].size(), 4u);
      EXPECT_EQ(sum["points"][1]["dropped"].get<uint64_t>(), 0u);
      // The sender's host pays a structure and a doorbell per datagram, whatever the size.
      EXPECT_EQ(sum["points"][0]["host_cpu_us_per_op"], sum["points"][2]["host_cpu_us_per_op"]);
      EXPECT_EQ(s["stats"]["system"]["host1"]["nic"]["ip"]["rx_delivered"].get<uint64_t>(), 2u * (6 + 64));  // per size: 6 echoes, 64 streamed
    }
  const auto d = test::temp_dir("mbp2_datagram_conventional");
  auto r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("mbcf-ss20-100tx.json") + " --quiet --out " +
                         (d / "o").string() + " --set workload.kind=datagram");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("workload.kind"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("mbcf.nic = mbp2"), std::string::npos) << r.output;
}

// The datagram workload beyond one frame: UDP datagrams up to IP's limit go in fragments on both
// configs, in the clear and sealed, every payload checked; under loss each datagram is taken,
// dropped (a reassembly given up) or lost, never mangled. A size whose fragments the receiving
// NIC could never hold (more than half its receive buffers) is a config error, as is TCP beyond a
// frame.
TEST(Mbp2Msg, TheDatagramWorkloadSendsDatagramsBeyondAFrameInFragments) {
  for (const char* cfg : {"mbp2p-ss20.json", "mbp2c-pci.json", "mbp2c-secure.json"}) {
    const auto s = stats_json(cfg, "--set workload.kind=datagram --set 'workload.sizes=[1473,20000]' --set workload.transfers=32"
                                   " --set workload.iterations=4");
    const auto& sum = s["summary"];
    ASSERT_TRUE(sum["finished"].get<bool>()) << cfg;
    EXPECT_EQ(sum["mismatched_datagrams"].get<uint64_t>(), 0u) << cfg;
    const auto& ip = s["stats"]["system"]["host1"]["nic"]["ip"];
    // UDP has no flow control: a receiver slower than the wire (the prototype's SBus, the
    // CAU opening every fragment) drops some; each stream datagram is taken, dropped by the NIC
    // (counted once, whichever of its fragments it could not hold) or lost whole on the wire.
    uint64_t taken = 0, lost = 0, checked = 2u * (1473 + 20000) * (4 + 2);  // 6 echoes per size, both ways
    for (int i : {1, 3}) {
      const auto& p = sum["points"][i];
      const uint64_t t = 32 - p["dropped"].get<uint64_t>() - p["lost"].get<uint64_t>();
      taken += t;
      lost += p["lost"].get<uint64_t>();
      checked += t * p["size"].get<uint64_t>();
    }
    EXPECT_EQ(ip["rx_delivered"].get<uint64_t>(), taken + 2 * 6) << cfg;
    EXPECT_EQ(sum["checked_bytes"].get<uint64_t>(), checked) << cfg;
    EXPECT_LE(lost, 1u) << cfg;  // a datagram none of whose fragments found a receive buffer
    EXPECT_EQ(ip["rx_reassembled"].get<uint64_t>(), ip["rx_delivered"].get<uint64_t>()) << cfg;  // every one came in fragments
  }
  // The PCI card keeps up with the wire: nothing dropped, every datagram reassembled.
  const auto s = stats_json("mbp2c-pci.json", "--set workload.kind=datagram --set 'workload.sizes=[1473,20000]' --set workload.transfers=32"
                                              " --set workload.iterations=4");
  for (int i : {1, 3}) {
    EXPECT_EQ(s["summary"]["points"][i]["dropped"].get<uint64_t>(), 0u);
    EXPECT_EQ(s["summary"]["points"][i]["lost"].get<uint64_t>(), 0u);
  }
  EXPECT_EQ(s["stats"]["system"]["host1"]["nic"]["ip"]["rx_reassembled"].get<uint64_t>(), 2u * (6 + 32));
  EXPECT_EQ(s["stats"]["system"]["host1"]["nic"]["ip"]["rx_fragments"].get<uint64_t>(), (6u + 32u) * (2u + 14u));  // 20,008 bytes: 14 pieces
  const auto lossy = stats_json("mbp2c-pci.json", "--set workload.kind=datagram --set 'workload.sizes=[6000]' --set workload.transfers=256"
                                                  " --set workload.iterations=4 --set ether.loss=0.02 --set ether.duplicate=0.02"
                                                  " --set workload.timeout_us=3000 --set mbp2.reasm_timeout_us=2000");
  const auto& ls = lossy["summary"];
  ASSERT_TRUE(ls["finished"].get<bool>());
  EXPECT_EQ(ls["mismatched_datagrams"].get<uint64_t>(), 0u);
  const auto& stream = ls["points"][1];
  EXPECT_GT(stream["dropped"].get<uint64_t>(), 0u);
  const uint64_t taken = lossy["stats"]["system"]["host1"]["nic"]["ip"]["rx_delivered"].get<uint64_t>() - 6 - ls["echo_timeouts"].get<uint64_t>();
  EXPECT_LE(taken + stream["dropped"].get<uint64_t>() + stream["lost"].get<uint64_t>(), 256u);
  EXPECT_EQ(lossy["stats"]["system"]["host1"]["nic"]["ip"]["rx_reasm_timeout"].get<uint64_t>(), stream["dropped"].get<uint64_t>());
  for (const char* bad : {"--set 'workload.sizes=[65507]'", "--set workload.protocol=tcp --set 'workload.sizes=[1461]'",
                          "--set 'workload.sizes=[65508]'"}) {
    const auto d = test::temp_dir("mbp2_datagram_sizes");
    auto r = test::run_cmd(test::mbpsim_bin() + " run " + test::config_path("mbp2c-pci.json") + " --quiet --out " + (d / "o").string() +
                           " --set workload.kind=datagram " + bad);
    EXPECT_EQ(r.status, 1) << bad << r.output;
    EXPECT_NE(r.output.find("workload.sizes"), std::string::npos) << r.output;
    EXPECT_EQ(test::count_lines(r.output), 1) << r.output;
    EXPECT_FALSE(std::filesystem::exists(d / "o" / "stats.json")) << bad;
  }
}

// A UDP stream of small datagrams between NICs that encrypt outruns the receiver's CAU: sealed
// frames find every receive buffer taken and are lost at the LDMA before anyone can tell they
// carried datagrams. They are counted (crypto.rx_no_buffer), the stream ends when every datagram
// was taken or lost, and what arrived is intact. (The run used to wait for them forever.)
TEST(Mbp2Msg, ASealedUdpStreamThatOutrunsTheReceiverEndsWithItsLossesCounted) {
  const auto s = stats_json("mbp2c-secure.json", "--set workload.kind=datagram --set workload.protocol=udp --set 'workload.sizes=[4]'"
                                                 " --set workload.transfers=256 --set workload.iterations=2");
  const auto& sum = s["summary"];
  ASSERT_TRUE(sum["finished"].get<bool>());
  EXPECT_EQ(sum["mismatched_datagrams"].get<uint64_t>(), 0u);
  const auto& stream = sum["points"][1];
  EXPECT_EQ(stream["command"], "UDP_STREAM");
  const uint64_t lost = s["stats"]["system"]["host1"]["nic"]["crypto"]["rx_no_buffer"].get<uint64_t>();
  EXPECT_GT(lost, 0u);
  EXPECT_EQ(stream["dropped"].get<uint64_t>(), lost);
  EXPECT_EQ(s["stats"]["system"]["host1"]["nic"]["ip"]["rx_delivered"].get<uint64_t>() + lost, 4u + 256u);  // 4 echoes (2 iterations, 2 to warm up), 256 streamed
}

}  // namespace
}  // namespace mbpsim::mbp2
