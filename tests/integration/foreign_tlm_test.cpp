// TLM-2.0 at the host boundary: a memory written by a user in plain TLM-2.0 (no mbpsim header
// in it) is bound as the physical memory of MBP2 hosts. The host's CPU takes its frames through
// DMI, the NIC's ADMA reaches it through the BIU's initiator socket with b_transport, and the
// delay the memory annotates is paid.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include <systemc>
#include <tlm>

#include "models/core/module_tree.h"
#include "models/mbp2/mbp2_system.h"
#include "tests/integration/cluster_tasks.h"
#include "tests/user_tlm_memory.h"

namespace {

using namespace mbpsim;
using namespace mbpsim::mbcf;

struct Cluster {
  Stats stats;
  Root root;  // built in it as the runner builds: statistics under system.*
  Calendar cal{"cal"};
  EtherSysConfig ec;
  std::unique_ptr<mbp2::Mbp2System> sys;
  explicit Cluster(uint32_t nodes) {
    Within in(root);
    ec.nodes = nodes;
    ec.ether.medium = net::EtherConfig::Medium::Direct;
    ec.ether.rate_mbps = 1000;
    sys = std::make_unique<mbp2::Mbp2System>(cal, ec, mbp2::Mbp2Config{}, stats, 1);
  }
  void tasks() {
    test::one_task_per_node(*sys, 4);
  }
  Task& task(uint32_t n) { return *sys->space(n).find(1); }
  // Where the task's byte at `laddr` lies in host physical memory.
  uint64_t phys(uint32_t n, uint32_t laddr) {
    const uint32_t pb = ec.page_bytes;
    return static_cast<uint64_t>(task(n).pages.at(laddr / pb).frame) * pb + laddr % pb;
  }
  Command write(uint32_t laddr, uint32_t len, uint8_t seed) {
    Command c;
    c.cmd = Cmd::Write;
    c.laddr = laddr;
    c.length = len;
    for (uint32_t i = 0; i < len; ++i) c.data.push_back(static_cast<uint8_t>(seed + 3 * i));
    return c;
  }
};

TEST(ForeignTlm, AUsersMemoryIsTheHostsMemoryForTheCpuAndForTheNicsDma) {
  Cluster c(2);
  UserMemory m0("user_mem0", 1 << 20, sc_core::SC_ZERO_TIME), m1("user_mem1", 1 << 20, sc_core::SC_ZERO_TIME);
  c.sys->use_host_memory(0, m0.socket);
  c.sys->use_host_memory(1, m1.socket);
  c.tasks();
  // The sockets sit in the module tree: the BIU's DMA master in its NIC, the host's own memory.
  EXPECT_NE(sc_core::sc_find_object("system.host1.nic.biu.dma_socket"), nullptr);
  EXPECT_NE(sc_core::sc_find_object("system.host1.memory.socket"), nullptr);
  // The sender's payload, stored by its CPU (through DMI), and sent from its memory.
  const Command w = c.write(0x10100, 512, 5);
  c.sys->space(0).write(c.task(0), 0x10000, w.data.data(), 512);
  EXPECT_EQ(m0.bytes[c.phys(0, 0x10000) + 1], 8u);  // the store is in the user's array
  bool returned = false;
  ASSERT_TRUE(c.sys->syscall(0, 1, Request{1, {w}, 0x10000}, [&] { returned = true; }));
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_MS));
  ASSERT_TRUE(returned);
  // The payload came from the sender's memory (its PGE gathers through the frames' DMI view);
  // the receiver's ADMA wrote it through the socket.
  EXPECT_GT(m1.writes, 0u);
  const uint64_t pa = c.phys(1, 0x10100);
  for (uint32_t i = 0; i < 512; ++i) {
    ASSERT_EQ(m1.bytes[pa + i], static_cast<uint8_t>(5 + 3 * i)) << i;
    uint8_t b = 0;
    c.sys->space(1).read(c.task(1), 0x10100 + i, &b, 1);  // the CPU's view is the same bytes
    ASSERT_EQ(b, m1.bytes[pa + i]);
  }
}

// Two receivers, one behind a memory that annotates 40 us per access. Five writes go to each;
// the receiving ADMA moves one descriptor at a time and takes the next only when the last is
// done, so the slow receiver's fifth write lands at least 4 x 40 us after the fast one's
// (the data of one access is in memory when b_transport returns, as in any LT model; the
// initiator pays the delay before it goes on).
TEST(ForeignTlm, TheDelayAMemoryAnnotatesIsPaidByTheDma) {
  Cluster c(3);
  UserMemory fast("fast", 1 << 20, sc_core::SC_ZERO_TIME), slow("slow", 1 << 20, sc_core::sc_time(40, sc_core::SC_US));
  c.sys->use_host_memory(1, fast.socket);
  c.sys->use_host_memory(2, slow.socket);
  c.tasks();
  uint64_t seen[3] = {0, 0, 0};
  for (uint32_t n : {1u, 2u})
    c.sys->poll(n, [&c, n] { uint8_t b = 0; c.sys->space(n).read(c.task(n), 0x10200 + 4 * 4, &b, 1); return b == 5; },
                [&seen, n] { seen[n] = sc_core::sc_time_stamp().value(); });
  for (uint32_t k = 0; k < 5; ++k)
    for (uint32_t to : {1u, 2u}) {
      Command w = c.write(0x10200 + 4 * k, 4, 0);
      w.data.assign(4, static_cast<uint8_t>(k + 1));
      ASSERT_TRUE(c.sys->syscall(0, 1, Request{to, {w}}, [] {}));
    }
  sc_core::sc_start(sc_core::sc_time(20, sc_core::SC_MS));
  ASSERT_GT(seen[1], 0u);
  ASSERT_GT(seen[2], 0u);
  EXPECT_GE(seen[2], seen[1] + 160'000'000u) << seen[1] << " vs " << seen[2];  // ps
  EXPECT_LT(seen[2], seen[1] + 2'000'000'000u) << seen[1] << " vs " << seen[2];
  EXPECT_GE(slow.writes, 5u);
}

TEST(ForeignTlm, AMemoryWithoutDmiIsRefusedNamingTheNodeAndFrame) {
  Cluster c(2);
  UserMemory m("nodmi", 1 << 20, sc_core::SC_ZERO_TIME);
  m.grant_dmi = false;
  c.sys->use_host_memory(1, m.socket);
  Task& t = c.sys->create_task(1, 1, 7);
  try {
    c.sys->space(1).map(t, 0x10000, 1, kPermRW);
    FAIL() << "mapped a frame of a memory that grants no DMI";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("node 1: host memory grants no read/write DMI over frame 0"), std::string::npos) << e.what();
  }
  // And a memory cannot be changed under frames already given out.
  Task& t0 = c.sys->create_task(0, 1, 8);
  c.sys->space(0).map(t0, 0x10000, 1, kPermRW);
  EXPECT_THROW(c.sys->use_host_memory(0, m.socket), std::logic_error);
}

}  // namespace
