// The MBP2 integration tests' shared rig: two nodes with MBP2 NICs on a direct gigabit cable,
// tasks 1 and 2 on each with their Ltask tables, and helpers (writes, config runs, a sniffer).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/core/module_tree.h"
#include "models/core/bytes.h"
#include "models/mbp2/mbp2_cards.h"
#include "models/systems/assembly.h"
#include "tests/test_util.h"

namespace mbpsim::mbp2 {

using namespace mbpsim::mbcf;

struct Rig {
  Stats stats;
  Root root;  // built in it as the runner builds: statistics under system.*
  Calendar cal{"cal"};
  EtherSysConfig ec;
  systems::Cluster k;         // as the assembly builds it
  EtherSystem* sys = nullptr;  // the cluster: hosts, protocol, wire
  Mbp2Cards* mbp2 = nullptr;   // its NICs
  explicit Rig(const Mbp2Config& mc = Mbp2Config{}, const EtherSysConfig& base = EtherSysConfig{}) : ec(base) {
    Within in(root);
    ec.nodes = 2;
    ec.ether.medium = net::EtherConfig::Medium::Direct;
    ec.ether.rate_mbps = 1000;
    k = systems::build_cluster(cal, ec, &mc, stats, 1);
    sys = k.sys.get();
    mbp2 = k.mbp2.get();
    for (uint32_t n = 0; n < 2; ++n) {
      Task& t = sys->create_task(n, 1, 1000 + n);
      sys->space(n).map(t, 0x10000, 16, kPermRW);
      Task& t2 = sys->create_task(n, 2, 2000 + n);
      sys->space(n).map(t2, 0x10000, 1, kPermRW);
    }
    for (uint32_t n = 0; n < 2; ++n)
      for (uint32_t m = 0; m < 2; ++m) {
        sys->set_ltask(n, 1, m, m, 1);
        sys->set_ltask(n, 2, m, m, 1);
      }
  }
  Task& task(uint32_t n) { return *sys->space(n).find(1); }
  uint8_t byte(uint32_t n, uint32_t a) {
    uint8_t b = 0;
    sys->space(n).read(task(n), a, &b, 1);
    return b;
  }
  uint64_t counter(const std::string& s) { return static_cast<uint64_t>(test::stat_value(stats, s)); }
  // A statistic of every card together (each host's NIC: system.host<n>.nic.<leaf>).
  uint64_t cards(const std::string& leaf) {
    uint64_t sum = 0;
    for (uint32_t n = 0; n < ec.nodes; ++n) sum += counter("system.host" + std::to_string(n) + ".nic." + leaf);
    return sum;
  }
  void run(double ms) { sc_core::sc_start(sc_core::sc_time(ms, sc_core::SC_MS)); }
  // Node 0's task 1 writes the words 1..n to node 1's task 1 at 0x11000, one after another, each
  // rung when the previous doorbell returns; `rung` counts them.
  void numbered_writes(uint32_t n);
  uint32_t rung = 0;
  std::function<void()> next_write;
};

inline Command write_bytes(uint32_t laddr, uint32_t n, uint8_t seed) {
  Command c;
  c.cmd = Cmd::Write;
  c.laddr = laddr;
  c.length = n;
  c.data.resize(n);
  for (uint32_t i = 0; i < n; ++i) c.data[i] = static_cast<uint8_t>(seed + i * 7);
  return c;
}

inline void Rig::numbered_writes(uint32_t n) {
  next_write = [this, n] {
    if (rung == n) return;
    Command c = write_bytes(0x11000 + 4 * rung, 4, 0);
    store_le(c.data.data(), 4, rung + 1);
    ++rung;
    ASSERT_TRUE(sys->syscall(0, 1, Request{1, {c}}, next_write));
  };
  next_write();
}

// A one-command request whose payload lies in node 0's task 1 at `src` (Request::src_laddr): the
// data is stored there first, and the NIC fetches it from there.
inline Request from_memory(Rig& r, uint32_t ltask, const Command& c, uint32_t src) {
  r.sys->space(0).write(r.task(0), src, c.data.data(), static_cast<uint32_t>(c.data.size()));
  return Request{ltask, {c}, src};
}

inline nlohmann::json stats_json(const std::string& config, const std::string& sets) {
  const auto r = test::run_config(config, sets);
  EXPECT_EQ(r.status, 0) << r.command << "\n" << r.output;
  return r.stats;
}
inline nlohmann::json points(const std::string& config, const std::string& sets) { return stats_json(config, sets)["summary"]["points"]; }

inline Mbp2Config crypto(Cipher c, Auth a, CryptoConfig::Keys k = CryptoConfig::Keys::Static) {
  Mbp2Config m;
  m.crypto.cipher = c;
  m.crypto.auth = a;
  m.crypto.keys = k;
  return m;
}

// A wire sniffer: every frame node 1 receives.
struct Sniffer {
  std::vector<std::vector<uint8_t>> frames;
  explicit Sniffer(Rig& r) {
    r.sys->ether().set_tap([this](uint32_t, const std::vector<uint8_t>& f) { frames.push_back(f); });
  }
  bool saw(const std::vector<uint8_t>& bytes) const {
    for (const auto& f : frames)
      if (std::search(f.begin(), f.end(), bytes.begin(), bytes.end()) != f.end()) return true;
    return false;
  }
};


constexpr uint32_t kRing = 0x18000, kSrcBuf = 0x11000;

// Writes `n` tagged bytes into node 0's task 1 at kSrcBuf + off; returns them.
inline std::vector<uint8_t> put_payload(Rig& r, uint32_t off, uint32_t n, uint8_t tag) {
  std::vector<uint8_t> p(n);
  for (uint32_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(tag * 31 + i);
  if (n) r.sys->space(0).write(r.task(0), kSrcBuf + off, p.data(), n);
  return p;
}

// Sends the requests one after another from node 0's task 1 (the user program continues when
// each doorbell write returns); every one must be accepted.
inline void send_all(Rig& r, std::vector<Mbp2Nic::DatagramRequest> q, size_t i = 0) {
  if (i == q.size()) return;
  const Mbp2Nic::DatagramRequest d = q[i];
  ASSERT_TRUE(r.mbp2->nic(0).send_datagram(1, d, [&r, q = std::move(q), i]() mutable { send_all(r, std::move(q), i + 1); }));
}

inline Mbp2Nic::DatagramRequest udp_to(uint32_t port, uint32_t off, uint32_t n) {
  Mbp2Nic::DatagramRequest d;
  d.dst_node = 1;
  d.src_port = 4000;
  d.dst_port = static_cast<uint16_t>(port);
  d.laddr = kSrcBuf + off;
  d.len = n;
  return d;
}

}  // namespace mbpsim::mbp2
