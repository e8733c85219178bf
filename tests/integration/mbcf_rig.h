// The MBCF/Ether integration tests' shared rig: a cluster on a configurable wire with tasks,
// Ltask tables and word-level helpers.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "models/core/module_tree.h"
#include "models/core/rng.h"
#include "models/mbcf/atomic.h"
#include "models/mbcf/ether_system.h"
#include "models/mbp2/mbp2_cards.h"
#include "models/systems/assembly.h"
#include "tests/integration/cluster_tasks.h"
#include "tests/test_util.h"

namespace mbpsim::mbcf {

struct Rig {
  Stats stats;
  Root root;  // built in it as the runner builds: statistics under system.*
  Calendar cal{"cal"};
  EtherSysConfig cfg;
  systems::Cluster k;          // as the assembly builds it
  EtherSystem* sys = nullptr;  // k.sys
  // `mbp2`: the same protocol run by MBP2 NICs (the PME's firmware) instead of host kernels.
  explicit Rig(EtherSysConfig c, uint64_t seed = 1, bool mbp2 = false) : cfg(c) {
    Within in(root);
    const mbp2::Mbp2Config mc;
    k = systems::build_cluster(cal, cfg, mbp2 ? &mc : nullptr, stats, seed);
    sys = k.sys.get();
    test::one_task_per_node(*sys, 16);
  }
  Task& task(uint32_t n) { return *sys->space(n).find(1); }
  uint32_t word(uint32_t n, uint32_t a) { return sys->space(n).load32(task(n), a); }
  void run(double ms) { sc_core::sc_start(sc_core::sc_time(ms, sc_core::SC_MS)); }
  // A packet built by hand (to be encoded and put on the wire by a test) from task 1 of node
  // `from` to task 1 of node `to`, with the right keys.
  Packet hand_built(uint32_t from, uint32_t to, std::vector<Command> cmds) {
    Packet p;
    p.dst_mac = mac_of(to);
    p.src_mac = mac_of(from);
    p.src_pnode = from;
    p.src_ptask = 1;
    p.src_key = task(from).key;
    p.dst_ptask = 1;
    p.dst_key = task(to).key;
    p.cmds = std::move(cmds);
    return p;
  }
};

inline Command write_word(uint32_t laddr, uint32_t v, ReplyMode rm = ReplyMode::None) {
  Command c = word_command(Cmd::Write, laddr, v);
  c.opt.reply = rm;
  if (rm != ReplyMode::None) c.status_laddr = 0x10000;
  return c;
}

inline uint64_t mbcf_stat(Rig& r, const char* name) { return r.stats.dump()["system"]["mbcf"][name].get<uint64_t>(); }

// The target address of every MBCF_WRITE from node 0 that node 1 accepts, in order.
inline void record_writes(Rig& r, std::vector<uint32_t>& order) {
  r.sys->set_accept_hook([&order](uint32_t from, uint32_t to, const Packet& p) {
    if (from == 0 && to == 1 && !p.cmds.empty() && p.cmds[0].cmd == Cmd::Write) order.push_back(p.cmds[0].laddr);
  });
}

// The `n` word writes to `base`, `base` + 4, ... with values `v0`, `v0` + 1, ... were each
// accepted once, in order, and are in node 1's memory.
inline void expect_writes_in_order(Rig& r, const std::vector<uint32_t>& order, uint32_t base, uint32_t v0, uint32_t n) {
  ASSERT_EQ(order.size(), n) << "each write accepted once\n" << r.sys->state_dump();
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_EQ(order[i], base + 4 * i) << "accepted out of order at " << i;
    EXPECT_EQ(r.word(1, base + 4 * i), v0 + i) << "write " << i;
  }
}

// Node 0 sends `n` tagged FIFO entries to node 1; every tag must arrive once, in order, and
// the sender's window must drain. Returns the most packets seen outstanding (sampled at every
// delivery and every 200 us).
inline size_t exactly_once_in_order(EtherSysConfig c, uint64_t seed, uint32_t n, int limit_ms = 2000,
                             const std::function<void(Rig&)>& check = nullptr, bool mbp2 = false) {
  std::printf("seed %llu%s\n", static_cast<unsigned long long>(seed), mbp2 ? " (MBP2 NICs)" : "");
  Rig r(c, seed, mbp2);
  init_fifo(r.sys->space(1), r.task(1), 0x10100, 0x11000, 0x8000);
  std::vector<uint32_t> got;
  size_t most = 0;
  r.sys->set_accept_hook([&](uint32_t from, uint32_t to, const Packet& p) {
    if (from == 0 && to == 1 && !p.cmds.empty() && p.cmds[0].cmd == Cmd::Fifo) got.push_back(static_cast<uint32_t>(load_le(p.cmds[0].data.data(), 4)));
    most = std::max<size_t>(most, r.sys->unacked(0, 1));
  });
  uint32_t sent = 0;
  std::function<void()> next = [&] {
    if (sent == n) return;
    Command f;
    f.cmd = Cmd::Fifo;
    f.laddr = 0x10100;
    f.length = 4;
    f.data.resize(4);
    store_le(f.data.data(), 4, sent++);
    ASSERT_TRUE(r.sys->syscall(0, 1, Request{1, {f}}, next));
  };
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  next();
  // Node 1 drains its FIFO now and then so it never fills.
  std::function<void()> drain = [&] {
    while (fifo_pop(r.sys->space(1), r.task(1), 0x10100)) {
    }
    most = std::max<size_t>(most, r.sys->unacked(0, 1));
    r.cal.after(200'000'000, drain);
  };
  drain();
  for (int i = 0; i < limit_ms / 5 && !(sent == n && r.sys->quiet()); ++i) r.run(5);
  EXPECT_EQ(got.size(), n) << "seed " << seed << "\n" << r.sys->state_dump();
  for (uint32_t i = 0; i < std::min<size_t>(n, got.size()); ++i) {
    EXPECT_EQ(got[i], i) << "seed " << seed;
    if (got[i] != i) break;
  }
  EXPECT_TRUE(r.sys->quiet()) << r.sys->state_dump();
  EXPECT_EQ(r.sys->unacked(0, 1), 0u);
  EXPECT_LE(most, c.th2) << "seed " << seed;
  if (check) check(r);
  return most;
}

}  // namespace mbpsim::mbcf
