// Workloads on MBCF/Ether (thesis 6.2, 6.3): round-trip latency (`rtt`), one-way latency of
// high-level commands (`oneway`), peak data-transfer rate (`peak`) and the parallel ray
// tracer (`raytrace`); the encrypted transfer of the MBP2 (`secure`, 8.3.6). Each owns an EtherSystem on its own calendar; the quad-tree network the
// runner builds stays idle.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "models/core/calendar.h"
#include "models/mbcf/ether_system.h"
#include "models/systems/assembly.h"
#include "workloads/workload.h"

namespace mbpsim {

void declare_mbcf_workload_params(ParamSchema& s);

class MbcfWorkload : public Workload {
 public:
  MbcfWorkload(const Config& c, Stats& stats, uint64_t seed);
  Phases phases() const override { return {0, 0, max_cycles_}; }
  uint64_t poll_cycles() const override { return 100000; }
  bool done() const override { return done_; }
  void on_packet(uint32_t, net::Packet&, uint64_t) override {}
  std::string stalled() const override;
  std::string failure_dump() const override { return sys_->state_dump(); }
  nlohmann::ordered_json host_figures(double wall_s) const override;
  uint64_t calendar_events() const override;
  mbcf::EtherSystem& system() { return *sys_; }
  // rtt, oneway and peak report a list of measured points; raytrace overrides this.
  nlohmann::ordered_json summary() const override;
  // The heartbeat's progress: the points measured of those planned, plus the share done of
  // the point in progress; -1 when the workload plans no points (planned_points() 0).
  double done_fraction() const override;

  // The address map every node's task 1 uses (logical addresses).
  static constexpr uint32_t kPtask = 1;
  static constexpr uint32_t kStatus = 0x10000;   // status words, one per slot of 4 bytes
  static constexpr uint32_t kFifo = 0x11000;     // FIFO structure
  static constexpr uint32_t kSignal = 0x11100;   // signal structure
  static constexpr uint32_t kFlag = 0x11200;     // misc words
  static constexpr uint32_t kFifoBuf = 0x12000;  // FIFO buffer (16 KiB)
  static constexpr uint32_t kSrc = 0x20000;      // data to send (64 KiB)
  static constexpr uint32_t kDst = 0x30000;      // where data arrives (64 KiB)
  static constexpr uint32_t kFrame = 0x100000;   // ray tracing: the display's frame buffer
  static constexpr uint32_t kImage = 0x40000;    // mbcf.interface user: where the user builds a packet

 protected:
  uint64_t now() const { return cal_->now_ps(); }
  // Task kPtask of `node` asks for `r` through the MBCF-requesting system call: with
  // mbcf.interface kernel, pointers to its commands; with user (6.1.3), it first builds the
  // packet's bytes itself at kImage, leaving the kernel's fields zero. Returns what syscall does.
  bool request(uint32_t node, mbcf::Request r, std::function<void()> k);
  void finish() { done_ = true; }
  // The points the workload will measure, and how far (0 to 1) the one in progress is.
  virtual size_t planned_points() const { return 0; }
  virtual double point_share() const { return 0; }
  double timer_read_ps() const { return cfg_.timer_read_us * 1e6; }
  // The sender's host CPU time (system calls and interrupt routines) since `mark_cpu()`.
  void mark_cpu() { cpu_mark_ = sys_->host_busy_ps(0); }
  // Adds what the NIC did (nic_summary) to a summary, when there is something.
  void add_nic(nlohmann::ordered_json& s) const;
  double cpu_us_since_mark() const { return (sys_->host_busy_ps(0) - cpu_mark_) / 1e6; }

  std::unique_ptr<Calendar> cal_;
  mbcf::EtherSysConfig cfg_;
  systems::Cluster cluster_;          // what the assembly built from the config
  mbcf::EtherSystem* sys_ = nullptr;  // its cluster (cluster_.sys)
  // Its MBP2 cards (nullptr with conventional NICs).
  mbp2::Mbp2Cards* mbp2() const { return cluster_.mbp2.get(); }
  uint64_t max_cycles_;
  bool done_ = false;
  uint64_t cpu_mark_ = 0;
  nlohmann::ordered_json points_ = nlohmann::ordered_json::array();
};

std::unique_ptr<Workload> make_mbcf_workload(const std::string& kind, const Config& c, Stats& stats, uint64_t seed);
// The workload kind runs on a cluster (make_mbcf_workload makes it).
bool is_mbcf_workload(const std::string& kind);
// rtt, oneway and peak over the hosts' socket stacks (workload.over udp; socket_workloads.cpp).
std::unique_ptr<Workload> make_socket_workload(const std::string& kind, const Config& c, Stats& stats, uint64_t seed);
// The MBP2's message passing (`datagram`, mbp2_datagram.cpp).
std::unique_ptr<Workload> make_datagram_workload(const Config& c, Stats& stats, uint64_t seed);

}  // namespace mbpsim
