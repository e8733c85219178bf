// MBCF/Ether against the thesis's tables (chapter 6): the calibrated and predicted figures of
// the shipped configs, and the NIC and host behaviours they rest on.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "models/core/rng.h"
#include "models/mbcf/atomic.h"
#include "models/mbcf/ether_system.h"
#include "models/mbp2/mbp2_cards.h"
#include "tests/test_util.h"
#include "tests/integration/mbcf_rig.h"

namespace mbpsim::mbcf {
namespace {

// ------------------------------------------------------------ calibration against the thesis

nlohmann::json run_points(const std::string& config, const std::string& sets) {
  const auto r = test::run_config(config, sets);
  EXPECT_EQ(r.status, 0) << r.command << "\n" << r.output;
  return r.summary()["points"];
}

void within(const nlohmann::json& pts, const std::vector<double>& thesis, double tol, const std::string& what) {
  ASSERT_EQ(pts.size(), thesis.size()) << what;
  for (size_t i = 0; i < thesis.size(); ++i) {
    const double v = pts[i]["value"].get<double>();
    EXPECT_LE(std::fabs(v - thesis[i]) / thesis[i], tol) << what << " size " << pts[i]["size"] << ": " << v << " vs " << thesis[i];
  }
}

TEST(Calibration, Table61SendingOverhead) {
  within(run_points("mbcf-ss20-100t-half.json", "--set 'workload.commands=[\"send\"]'"), {5.0, 5.5, 6.0, 8.5, 20.0}, 0.10, "6.1");
}

TEST(Calibration, Table63RoundTrip) {
  within(run_points("mbcf-ss20-100t-half.json", ""),
         {51, 54, 60.5, 88, 200, 51, 54.5, 61, 88, 200.5, 51.5, 58, 71.5, 125.5, 351}, 0.10, "6.3");
}

TEST(Calibration, Table62FullDuplex) {
  within(run_points("mbcf-ss20-100tx.json", ""), {0.34, 1.27, 4.82, 9.63, 11.64, 11.93}, 0.10, "6.2 100BASE-TX");
}

TEST(Calibration, Table610OneWay1000SX) {
  within(run_points("mbcf-ultra60-1000sx.json", ""), {9.6, 11.0, 11.5, 16.2, 35.9}, 0.10, "6.10");
}

// Table 6.2's 100BASE-T hub. Up to 64 bytes the sender's host sets the rate, and the
// transmit-completion routine is calibrated on these points together with the full-duplex
// row's (least squares: the model has no mechanism for the hub row's 9-11% lag there, so it
// sits between the rows). From 256 bytes the wire is the limit: a drift guard (with the
// LANCE-mode gap +1% to +5%; without it -7% to -9%, still inside the bound, so the gap itself
// is checked by the EtherHub unit tests).
TEST(Calibration, Table62HalfDuplexHub) {
  within(run_points("mbcf-ss20-100t-half.json", "--set workload.kind=peak --set 'workload.sizes=[4,16,64,256,1024,1408]' --set workload.transfers=4096"),
         {0.31, 1.15, 4.31, 8.56, 11.13, 11.48}, 0.10, "6.2 100BASE-T hub");
}

// Table 6.9. The burst overhead is the slope from 256 bytes; the descriptor fetch and the
// receive latency are fitted to this row and Table 6.10 together (least squares), which spreads
// the thesis's 2-burst points, 0.35 us above the line through the others, over the row
// (docs/VALIDATION.md): the 64-byte point is the largest error, +8%.
TEST(Calibration, Table69PeakPci) {
  within(run_points("mbcf-ultra60-1000sx.json", "--set workload.kind=peak --set 'workload.sizes=[4,16,64,256,1024,1408]'"),
         {2.29, 5.67, 22.30, 55.41, 78.22, 80.92}, 0.10, "6.9");
}

// The Ultra 60's NIC has one DMA engine for descriptors and data: at 64 bytes, where the
// sender's NIC is the bottleneck, each frame costs its descriptor fetch (nic.tx_latency_ns)
// plus its two 64-byte PCI bursts (39 + 8 cycles each at 66 MHz), and a NIC that prefetched
// the descriptor during the DMA before would go faster.
// (A status check every 512 transfers rather than 16, so that the acknowledgements' own DMA on
// the sender's bus and the round trips they wait on stay out of the figure: with 16 they take
// another 3-4%.)
TEST(MbcfEther, OneDmaEngineFetchesTheNextDescriptorOnlyAfterTheFrameBefore) {
  const std::string sets = "--set workload.kind=peak --set 'workload.sizes=[64]' --set workload.ack_every=512 --set workload.transfers=8192";
  const double one = run_points("mbcf-ultra60-1000sx.json", sets)[0]["value"].get<double>();
  const double pre = run_points("mbcf-ultra60-1000sx.json", sets + " --set nic.tx_prefetch=true")[0]["value"].get<double>();
  const double per_frame_us = 1.13 + 2 * 47 / 66.0;
  EXPECT_NEAR(one, 64 / per_frame_us, 64 / per_frame_us * 0.01);
  EXPECT_GT(pre, one * 1.25);
}

// The 10BASE-T row is the SS20's built-in LANCE, whose small transmit FIFO streams each frame:
// its turnaround between frames (32 us) is fitted to the whole row (least squares). The 4-byte
// point (+8%, printed 0.04 with one significant digit) and the 16-byte one (-5%) disagree in
// the thesis itself, and the fit splits the difference (docs/VALIDATION.md).
TEST(Calibration, Table62TenMegabitHub) {
  within(run_points("mbcf-ss20-10t.json", "--set workload.transfers=2048"), {0.04, 0.17, 0.48, 0.89, 1.13, 1.17}, 0.10, "6.2 10BASE-T hub");
}

// A NIC streaming through a small FIFO takes the next frame only after the one before has left
// the wire, its turnaround later: one frame per frame time plus turnaround (the receiver's
// acknowledgements fall into the turnarounds, so nothing collides); a NIC holding whole frames
// sends back to back (in LANCE mode, so that its stream does not collide with them either).
TEST(MbcfEther, AStreamingNicSendsAFrameOnlyATurnaroundAfterTheOneBefore) {
  const std::string sets = "--set 'workload.sizes=[256]' --set workload.transfers=2048 --set nic.tx_latency_ns=32000";
  const double streams = run_points("mbcf-ss20-10t.json", sets)[0]["value"].get<double>();
  const double whole = run_points("mbcf-ss20-10t.json", sets + " --set nic.tx_streams=false --set ether.lance_mode=true")[0]["value"].get<double>();
  // 256 bytes in a 308-byte frame with its FCS, 8 of preamble: 252.8 us at 10 Mb/s, then 32 us.
  const double per_frame_us = (308 + 8) * 0.8 + 32.0;
  EXPECT_LT(streams, 256 / per_frame_us);
  EXPECT_GT(streams, 256 / per_frame_us * 0.97);  // what the acknowledgements take
  EXPECT_GT(whole, streams * 1.03);
}

TEST(Calibration, Table64OneWayWrite100TX) {
  within(run_points("mbcf-ss20-100t-half.json", "--set workload.kind=oneway --set 'workload.commands=[\"write\"]'"),
         {24.5, 27.5, 34, 60.5, 172}, 0.10, "6.4 MBCF_WRITE");
}

// 6.2.5: "MBCF_FIFO latencies include the cost of one light-weight system-call for reading
// fifo data", SIGNAL's "one invocation of the user-level subroutine and one light-weight
// system-call". The OS model gives those terms and nothing else: on an otherwise idle
// receiver, FIFO's one way is WRITE's plus the call's trap and the copy of the entry, and
// SIGNAL's is about FIFO's plus the invocation and the copy of the signal record's header;
// each point says so (`receiver_os`), in the microseconds the OS's parameters give.
TEST(MbcfEther, FifoAndSignalOneWayAreWriteOnesPlusTheOsTermsTheyContain) {
  for (const std::string machine : {"mbcf-ss20-100t-half.json", "mbcf-ultra60-1000sx.json"}) {
    const auto r = test::run_config(machine, "--set workload.kind=oneway --set 'workload.commands=[\"write\",\"fifo\",\"signal\"]'");
    ASSERT_EQ(r.status, 0) << r.output;
    const auto& pts = r.summary()["points"];
    const double mhz = machine.find("ultra60") != std::string::npos ? 450 : 85;
    const double lw_us = (machine.find("ultra60") != std::string::npos ? 360 : 170) / mhz;
    const double invoke_us = (machine.find("ultra60") != std::string::npos ? 900 : 425) / mhz;
    const double copy_mb_s = machine.find("ultra60") != std::string::npos ? 877 : 68;
    // The receive routine's work on each structure (host.int_struct_cycles): a FIFO's one, a
    // SIGNAL's two (its signal structure and the FIFO it stores into).
    const double struct_us = (machine.find("ultra60") != std::string::npos ? 74 : 50) / mhz;
    const size_t n = pts.size() / 3;
    ASSERT_EQ(pts.size(), 3 * n) << machine;
    for (size_t i = 0; i < n; ++i) {
      const auto &w = pts[i], &f = pts[n + i], &g = pts[2 * n + i];
      const double size = w["size"].get<double>();
      ASSERT_EQ(f["command"], "MBCF_FIFO");
      ASSERT_EQ(g["command"], "MBCF_SIGNAL");
      EXPECT_FALSE(w.contains("receiver_os")) << "a WRITE uses no OS service on the receiver";
      // Where the time goes: the parts of each path add up to its one-way latency, and FIFO's
      // extra time is all on the receiver, after the routine has taken the packet.
      for (const auto* q : {&w, &f, &g}) {
        const auto& path = (*q)["path"];
        ASSERT_TRUE(path.is_object()) << (*q).dump();
        double sum = 0;
        for (const auto& [k, v] : path.items()) sum += v.get<double>();
        EXPECT_NEAR(sum, (*q)["value"].get<double>(), 0.005) << machine << " " << (*q).dump();
      }
      EXPECT_EQ(f["path"]["sender_us"], w["path"]["sender_us"]);
      EXPECT_EQ(f["path"]["network_us"], w["path"]["network_us"]);
      const double copy = size / copy_mb_s;
      EXPECT_NEAR(f["receiver_os"]["lw_syscall_us"].get<double>(), lw_us, 0.001) << machine << " " << size;
      EXPECT_NEAR(f["receiver_os"]["lw_copy_us"].get<double>(), copy, 0.002) << machine << " " << size;
      EXPECT_EQ(f["receiver_os"]["invoke_us"].get<double>(), 0.0);
      EXPECT_NEAR(f["routine_structures_us"].get<double>(), struct_us, 0.001) << machine << " " << size;
      EXPECT_FALSE(w.contains("routine_structures_us")) << "a WRITE's target is no structure";
      EXPECT_NEAR(f["value"].get<double>() - w["value"].get<double>(), lw_us + copy + struct_us, 0.01) << machine << " " << size;
      // The signal record: the 12-byte header the MBCF-interrupt routine stores before the data.
      const double record_copy = (size + 12) / copy_mb_s;
      EXPECT_NEAR(g["receiver_os"]["invoke_us"].get<double>(), invoke_us, 0.001) << machine << " " << size;
      EXPECT_NEAR(g["receiver_os"]["lw_copy_us"].get<double>(), record_copy, 0.002) << machine << " " << size;
      EXPECT_NEAR(g["routine_structures_us"].get<double>(), 2 * struct_us, 0.001) << machine << " " << size;
      // SIGNAL's receiving side against FIFO's, term by term: the invocation, the longer copy out
      // (the record's 12-byte header), the second structure, the routine's store of that header
      // into the FIFO, and no poll loop to notice the entry (host.poll_cycles, 20, an iteration).
      // (Its packet is longer on the wire too: that is in network_us.)
      const double poll_us = 20 / mhz, header_store = 12 / copy_mb_s;
      EXPECT_NEAR(g["path"]["receiver_us"].get<double>() - f["path"]["receiver_us"].get<double>(),
                  invoke_us + record_copy - copy + struct_us + header_store - poll_us, 0.005)
          << machine << " " << size;
      EXPECT_EQ(g["path"]["sender_us"], f["path"]["sender_us"]);
    }
  }
}

// 6.1.3: user construction builds the body in user space and the kernel still copies the
// packet once, so it costs more than kernel construction, the more the larger the data.
TEST(MbcfEther, UserConstructionCostsMoreThanKernelConstructionGrowingWithSize) {
  const auto k = run_points("mbcf-ss20-100t-half.json", "--set 'workload.commands=[\"send\"]'");
  const auto u = run_points("mbcf-ss20-100t-half.json", "--set 'workload.commands=[\"send\"]' --set mbcf.interface=user");
  ASSERT_EQ(k.size(), u.size());
  double last = 0;
  for (size_t i = 0; i < k.size(); ++i) {
    const double d = u[i]["value"].get<double>() - k[i]["value"].get<double>();
    EXPECT_GT(d, 0) << "size " << k[i]["size"];
    EXPECT_GT(d, last) << "size " << k[i]["size"];
    last = d;
  }
  // And the round trip still works end to end with user-built packets.
  const auto rt = run_points("mbcf-ss20-100t-half.json", "--set mbcf.interface=user");
  const auto rk = run_points("mbcf-ss20-100t-half.json", "");
  for (size_t i = 0; i < rt.size(); ++i) EXPECT_GT(rt[i]["value"].get<double>(), rk[i]["value"].get<double>());
}

TEST(MbcfEther, RaytraceWritesTheWholeFrameAndScales) {
  auto run = [&](int calc) {
    const auto r = test::run_config("mbcf-ss20-100tx.json", "--set workload.kind=raytrace --set mbcf.nodes=" + std::to_string(calc + 1) +
                                                                " --set workload.calc_nodes=" + std::to_string(calc) + " --set workload.payload_bytes=16");
    EXPECT_EQ(r.status, 0) << r.command << "\n" << r.output;
    return r.summary();
  };
  const auto one = run(1), four = run(4);
  EXPECT_TRUE(one["frame_correct"].get<bool>());
  EXPECT_TRUE(four["frame_correct"].get<bool>());
  EXPECT_GT(one["exec_time_s"].get<double>(), 576 * 450 * 70e-6);  // at least the computation
  EXPECT_LT(four["exec_time_s"].get<double>(), one["exec_time_s"].get<double>() / 3);
}

}  // namespace
}  // namespace mbpsim::mbcf
