// The module tree (docs/ARCHITECTURE.md, "Module tree"): every part of a machine is a SystemC
// module under the root `system`, with the hierarchical name the architecture page draws, and
// every statistic is registered under the name of the module it belongs to.
#include <gtest/gtest.h>

#include <string>
#include <type_traits>

#include <systemc>

#include "models/core/module_tree.h"
#include "models/mbcf/conventional_nic.h"
#include "models/net/network.h"
#include "models/systems/assembly.h"
#include "sim/runner.h"
#include "tests/mbp_harness.h"
#include "tests/test_util.h"

namespace mbpsim {
namespace {

// The module a statistic belongs to: the longest prefix of its path, cut at a dot, that names
// an object of the tree (nullptr when none does).
sc_core::sc_object* owner_of(const std::string& path) {
  for (size_t dot = path.rfind('.'); dot != std::string::npos && dot > 0; dot = path.rfind('.', dot - 1))
    if (sc_core::sc_object* o = sc_core::sc_find_object(path.substr(0, dot).c_str())) return o;
  return nullptr;
}

// Every statistic lies under a module below the root, never under the root itself.
void expect_every_stat_owned(const Stats& st) {
  size_t n = 0;
  for (const Stats::Info& i : st.describe()) {
    sc_core::sc_object* o = owner_of(i.path);
    ASSERT_NE(o, nullptr) << i.path << " names no module";
    EXPECT_STREQ(o->kind(), "sc_module") << i.path;
    EXPECT_NE(std::string(o->name()), "system") << i.path << " is the root's, not a part's";
    ++n;
  }
  EXPECT_GT(n, 0u);
}

bool is_module(const std::string& name) {
  sc_core::sc_object* o = sc_core::sc_find_object(name.c_str());
  return o && std::string(o->kind()) == "sc_module";
}

TEST(ModuleTree, TheMbpMachineIsAModuleTreeUnderTheRoot) {
  test::MbpHarness h(load_config(test::config_path("mbp16.json"), {}));
  // 16 nodes of 4 processors and 4 banks on a radix-4 tree of 2 levels.
  EXPECT_TRUE(is_module("system"));
  EXPECT_TRUE(is_module("system.net"));
  EXPECT_TRUE(is_module("system.mbp"));
  EXPECT_TRUE(is_module("system.net.router_0_0"));
  for (int r = 0; r < 4; ++r) EXPECT_TRUE(is_module("system.net.router_1_" + std::to_string(r))) << r;
  EXPECT_EQ(sc_core::sc_find_object("system.net.router_2_0"), nullptr);
  for (int n = 0; n < 16; ++n) {
    const std::string node = "system.node" + std::to_string(n);
    ASSERT_TRUE(is_module(node)) << node;
    for (int p = 0; p < 4; ++p)
      for (const char* part : {"", ".l1", ".l2", ".ptlb"})
        EXPECT_TRUE(is_module(node + ".proc" + std::to_string(p) + part)) << node << " proc" << p << part;
    EXPECT_EQ(sc_core::sc_find_object((node + ".proc4").c_str()), nullptr);
    for (const char* part : {".bus", ".mbp", ".mbp.ctlb", ".mbp.ntlb", ".mbp.dir"}) EXPECT_TRUE(is_module(node + part)) << node << part;
    for (int b = 0; b < 4; ++b) {
      EXPECT_TRUE(is_module(node + ".bank" + std::to_string(b))) << node;
      EXPECT_NE(sc_core::sc_find_object((node + ".bus.to_bank" + std::to_string(b)).c_str()), nullptr) << node;
    }
    // The node bus's target socket and its initiators: each processor's and the MBP's.
    for (const std::string& s : {node + ".bus.socket", node + ".mbp.bus", node + ".proc0.bus", node + ".proc3.bus"})
      EXPECT_NE(sc_core::sc_find_object(s.c_str()), nullptr) << s;
    // A node's children: 4 processors, the bus, the MBP and 4 banks.
    EXPECT_EQ(sc_core::sc_find_object(node.c_str())->get_child_objects().size(), 10u) << node;
  }
  // Nothing of the machine hangs outside the root.
  for (sc_core::sc_object* top : sc_core::sc_get_top_level_objects()) EXPECT_STREQ(top->name(), "system");
}

// The MBP's directory is its own module and holds the entries: one per page the node is the
// home of, made with the home frame, for every page the run touched.
TEST(ModuleTree, EachNodesDirectoryHoldsAnEntryForEveryPageItIsTheHomeOf) {
  test::MbpHarness h(load_config(test::config_path("mbp16.json"), {}));
  EXPECT_EQ(h.sys().pages_placed(), 0u);
  for (uint32_t n = 0; n < 16; ++n) EXPECT_EQ(h.sys().directory_entries(n), 0u) << n;
  h.run();
  ASSERT_TRUE(h.workload().done());
  uint64_t entries = 0;
  uint32_t homes = 0;
  for (uint32_t n = 0; n < 16; ++n) {
    entries += h.sys().directory_entries(n);
    homes += h.sys().directory_entries(n) > 0;
  }
  EXPECT_GT(h.sys().pages_placed(), 16u);
  EXPECT_EQ(entries, h.sys().pages_placed());
  EXPECT_GT(homes, 1u);  // the pages' homes are spread over the machine
}

TEST(ModuleTree, EveryStatisticOfTheMbpMachineLivesUnderItsModule) {
  test::MbpHarness h(load_config(test::config_path("mbp16.json"), {}));
  expect_every_stat_owned(h.registry());
  // Each processor's caches and TLB count under their own modules, not summed per node.
  EXPECT_TRUE(h.registry().counter_value("system.node3.proc1.l1.hits").has_value());
  EXPECT_FALSE(h.registry().counter_value("system.node3.l1.hits").has_value());  // not summed per node
  EXPECT_TRUE(h.registry().counter_value("system.node3.mbp.ctlb.hits").has_value());
  EXPECT_TRUE(h.registry().counter_value("system.net.router_1_2.combining.allocated").has_value());
}

TEST(ModuleTree, APartBuiltTwiceNamesItsStatisticsApart) {
  // Two networks under two roots, one registry: nothing collides, each router counts its own.
  Stats st;
  net::NetConfig nc;
  Root a("left"), b("right");
  std::unique_ptr<net::Network> na, nb;
  {
    Within in(a);
    na = std::make_unique<net::Network>("net", nc, st);
  }
  {
    Within in(b);
    nb = std::make_unique<net::Network>("net", nc, st);
  }
  EXPECT_STREQ(na->name(), "left.net");
  EXPECT_STREQ(nb->name(), "right.net");
  EXPECT_TRUE(st.counter_value("left.net.router_0_0.combining.allocated").has_value());
  EXPECT_TRUE(st.counter_value("right.net.router_0_0.combining.allocated").has_value());
  EXPECT_FALSE(st.counter_value("system.net.packets_injected").has_value());
  expect_every_stat_owned(st);
}

// A cluster as the runner builds it: in the root, from a shipped config.
struct Cluster {
  Stats stats;
  Root root;
  std::unique_ptr<Calendar> cal;
  systems::Cluster k;
  mbcf::EtherSystem* sys = nullptr;
  explicit Cluster(const std::string& config) {
    const Config c = load_config(test::config_path(config), {});
    Within in(root);
    cal = std::make_unique<Calendar>("calendar");
    k = systems::make_cluster(*cal, c, stats, 1);
    sys = k.sys.get();
  }
};

TEST(ModuleTree, AClusterHostHoldsItsOsMemoryCpuStackAndNic) {
  Cluster k("mbcf-ss20-100tx.json");
  ASSERT_GE(k.sys->nodes(), 2u);
  EXPECT_EQ(k.k.mbp2, nullptr);  // conventional NICs: no MBP2 cards
  for (const char* m : {"system.mbcf", "system.ether", "system.calendar"}) EXPECT_TRUE(is_module(m)) << m;
  for (uint32_t n = 0; n < k.sys->nodes(); ++n) {
    const std::string host = "system.host" + std::to_string(n);
    EXPECT_EQ(&k.sys->host(n), sc_core::sc_find_object(host.c_str()));
    for (const char* part : {".os", ".memory", ".cpu", ".stack", ".nic"}) EXPECT_TRUE(is_module(host + part)) << host << part;
    // The OS (its costs, host::Os) holds the tasks and page tables MBCF's kernel keeps.
    EXPECT_EQ(static_cast<sc_core::sc_object*>(&k.sys->os(n)), sc_core::sc_find_object((host + ".os").c_str()));
    EXPECT_EQ(&k.sys->space(n), sc_core::sc_find_object((host + ".os.tasks").c_str()));
    EXPECT_TRUE(k.stats.counter_value(host + ".os.lw_syscalls").has_value());
    EXPECT_NE(sc_core::sc_find_object((host + ".memory.socket").c_str()), nullptr);
    EXPECT_EQ(dynamic_cast<sc_core::sc_object*>(&k.sys->nic(n)), sc_core::sc_find_object((host + ".nic").c_str()));
    EXPECT_EQ(sc_core::sc_find_object(host.c_str())->get_child_objects().size(), 5u) << host;
  }
  for (sc_core::sc_object* top : sc_core::sc_get_top_level_objects()) EXPECT_STREQ(top->name(), "system");
  // The protocol's statistics (over every node) are the system.mbcf module's, the wire's the
  // segment's.
  expect_every_stat_owned(k.stats);
  EXPECT_TRUE(k.stats.counter_value("system.mbcf.packets_sent").has_value());
  EXPECT_TRUE(k.stats.counter_value("system.ether.frames").has_value());
}

// The MBP2 cards are composed with the cluster (the NICs and executors its factories make),
// not a kind of cluster.
static_assert(!std::is_base_of_v<mbcf::EtherSystem, mbp2::Mbp2Cards>);

TEST(ModuleTree, TheMbp2IsTheHostsNicAndItsUnitsAreItsChildren) {
  Cluster k("mbp2p-ss20.json");
  ASSERT_NE(k.k.mbp2, nullptr);
  EXPECT_EQ(&k.k.mbp2->cluster(), k.sys);
  // The cluster's NICs are the cards' ports, each sending on the cluster's segment.
  for (uint32_t n = 0; n < k.sys->nodes(); ++n) EXPECT_EQ(&k.k.mbp2->nic(n).wire(), &k.sys->ether()) << n;
  for (uint32_t n = 0; n < k.sys->nodes(); ++n) {
    const std::string nic = "system.host" + std::to_string(n) + ".nic";
    // One card object per host: the module at host<n>.nic is that host's Mbp2Nic.
    EXPECT_EQ(static_cast<sc_core::sc_object*>(&k.k.mbp2->nic(n)), sc_core::sc_find_object(nic.c_str())) << nic;
    EXPECT_EQ(k.k.mbp2->nic(n).node(), n);
    EXPECT_TRUE(is_module("system.host" + std::to_string(n) + ".os"));
    for (const char* u : {"", ".biu", ".em", ".tlb", ".pme", ".kli", ".icu", ".uli", ".pge", ".adma", ".ldma_tx", ".ldma_rx"})
      EXPECT_TRUE(is_module(nic + u)) << nic << u;
    EXPECT_NE(sc_core::sc_find_object((nic + ".biu.dma_socket").c_str()), nullptr);
    // The protocol runs on the card's PME: the host has no kernel stack.
    EXPECT_EQ(sc_core::sc_find_object(("system.host" + std::to_string(n) + ".stack").c_str()), nullptr);
    // Each card's statistics are its own, its units' under theirs.
    EXPECT_TRUE(k.stats.counter_value(nic + ".bad_requests").has_value()) << nic;
    EXPECT_TRUE(k.stats.counter_value(nic + ".pge.descriptors").has_value()) << nic;
  }
  for (sc_core::sc_object* top : sc_core::sc_get_top_level_objects()) EXPECT_STREQ(top->name(), "system");
  expect_every_stat_owned(k.stats);
}

}  // namespace
}  // namespace mbpsim
