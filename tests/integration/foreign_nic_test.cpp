// The NIC seam (models/mbcf/nic.h): a NIC a user writes against mbcf::Nic, the calendar and the
// Ethernet's station port is the cluster's NIC under the unchanged MBCF kernel stack.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "models/core/module_tree.h"
#include "models/mbcf/conventional_nic.h"
#include "models/mbcf/ether_system.h"
#include "models/mbcf/nic.h"
#include "models/net/ether.h"
#include "tests/integration/cluster_tasks.h"

namespace {

using namespace mbpsim;
using namespace mbpsim::mbcf;

// The user's NIC: a fixed time from the hand-over to the wire and from the wire to the stack;
// it gives up every `drop_every`-th frame it is handed (a transmit error), and forgets what it
// holds when the power goes.
class UserNic final : public Nic {
 public:
  UserNic(Calendar& cal, net::EtherSegment& wire, uint32_t station, uint64_t tx_ps, uint64_t rx_ps, uint32_t drop_every)
      : cal_(cal), wire_(wire), station_(station), tx_ps_(tx_ps), rx_ps_(rx_ps), drop_every_(drop_every) {}
  void transmit(uint32_t dst, Frame&& frame, Sent sent) override {
    const bool drop = drop_every_ && ++handed % drop_every_ == 0;
    cal_.after(tx_ps_, [this, dst, drop, epoch = epoch_, f = std::move(frame), k = std::move(sent)]() mutable {
      if (epoch != epoch_) return;
      if (drop) {
        ++dropped;
        return k(false);
      }
      wire_.send(station_, dst, std::move(f), [this, epoch, k = std::move(k)](bool) {
        if (epoch != epoch_) return;
        ++on_wire;
        k(true);
      });
    });
  }
  void receive(Frame&& frame, RxReady ready) override {
    ++received;
    cal_.after(rx_ps_, [f = std::move(frame), k = std::move(ready)]() mutable {
      Rx r{std::move(f), 0};
      k(&r);
    });
  }
  void power_off() override { ++epoch_; }
  uint32_t handed = 0, dropped = 0, on_wire = 0, received = 0;

 private:
  Calendar& cal_;
  net::EtherSegment& wire_;
  const uint32_t station_;
  const uint64_t tx_ps_, rx_ps_;
  const uint32_t drop_every_;
  uint64_t epoch_ = 0;
};

struct Cluster {
  Stats stats;
  Root root;  // built in it as the runner builds: statistics under system.*
  Calendar cal{"cal"};
  EtherSysConfig ec;
  std::vector<UserNic*> nics;
  std::unique_ptr<EtherSystem> sys;
  // Node n's NIC: tx_us[n] to the wire, 2 us back, dropping every drop_every-th frame.
  Cluster(std::vector<double> tx_us, uint32_t drop_every) {
    Within in(root);
    ec.nodes = static_cast<uint32_t>(tx_us.size());
    ec.ether.medium = net::EtherConfig::Medium::Switch;
    ec.ether.rate_mbps = 100;
    nics.resize(ec.nodes);
    sys = std::make_unique<EtherSystem>(cal, ec, stats, 1, [&](uint32_t n, net::EtherSegment& wire) {
      auto nic = std::make_unique<UserNic>(cal, wire, n, static_cast<uint64_t>(tx_us[n] * 1e6), 2000000, drop_every);
      nics[n] = nic.get();
      return nic;
    });
    tasks();
  }
  // Two nodes with the conventional NIC of the default parameters.
  Cluster() {
    Within in(root);
    ec.nodes = 2;
    sys = std::make_unique<EtherSystem>(cal, ec, stats, 1);
    tasks();
  }
  void tasks() {
    test::one_task_per_node(*sys, 16);
  }
  Request write(uint32_t to, uint32_t laddr, uint32_t v) { return test::word_write(to, laddr, v); }
  void stream(uint32_t from, uint32_t to, uint32_t n, uint32_t v0) { test::stream_writes(*sys, from, to, n, v0); }
  uint32_t word(uint32_t n, uint32_t a) { return test::task_word(*sys, n, a); }
};

// An Ethernet frame of `len` bytes from node `from` to node `to`, of EtherType `type`.
std::vector<uint8_t> raw_frame(uint32_t from, uint32_t to, uint16_t type, uint32_t len, uint32_t salt) {
  std::vector<uint8_t> f(len);
  const uint64_t dst = mac_of(to), src = mac_of(from);
  for (int b = 0; b < 6; ++b) f[b] = static_cast<uint8_t>(dst >> (40 - 8 * b)), f[6 + b] = static_cast<uint8_t>(src >> (40 - 8 * b));
  f[12] = static_cast<uint8_t>(type >> 8), f[13] = static_cast<uint8_t>(type);
  for (size_t b = 14; b < f.size(); ++b) f[b] = static_cast<uint8_t>(salt * 13 + b);
  return f;
}

TEST(ForeignNic, GoBackNDeliversEveryWriteOnceAndInOrderOverAUsersNicThatDropsFrames) {
  Cluster c({5.0, 5.0}, 7);
  std::vector<uint32_t> order;
  c.sys->set_accept_hook([&order](uint32_t from, uint32_t to, const Packet& p) {
    if (from == 0 && to == 1 && !p.cmds.empty() && p.cmds[0].cmd == Cmd::Write) order.push_back(p.cmds[0].laddr);
  });
  const uint32_t n = 200;
  c.stream(0, 1, n, 500);
  sc_core::sc_start(sc_core::sc_time(3, sc_core::SC_SEC));  // a loss the receiver cannot see costs a 20 ms timeout
  ASSERT_TRUE(c.sys->failure().empty()) << c.sys->failure();
  ASSERT_EQ(order.size(), n) << c.sys->state_dump();
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_EQ(order[i], 0x10000 + 4 * i) << "write " << i;
    EXPECT_EQ(c.word(1, 0x10000 + 4 * i), 500 + i) << "word " << i;
  }
  EXPECT_TRUE(c.sys->quiet());
  // The user's NIC carried the traffic both ways, and its drops were made good by resends.
  EXPECT_GT(c.nics[0]->dropped, 0u);
  EXPECT_GT(c.nics[1]->on_wire, 0u);  // acknowledgements
  EXPECT_EQ(c.nics[1]->received, c.nics[0]->on_wire);
  EXPECT_GT(c.stats.dump()["system"]["mbcf"]["retransmissions"].get<uint64_t>() +
                c.stats.dump()["system"]["mbcf"]["timeouts"].get<uint64_t>(),
            0u);
}

TEST(ForeignNic, TheStackWaitsForExactlyWhatTheNicTakes) {
  // Two pairs, the same in everything but the senders' NICs: 10 us and 60 us to the wire.
  Cluster c({10.0, 5.0, 60.0, 5.0}, 0);
  std::vector<uint64_t> accepted(4, 0);
  c.sys->set_accept_hook([&](uint32_t, uint32_t to, const Packet&) { accepted[to] = c.cal.now_ps(); });
  c.stream(0, 1, 1, 7);
  c.stream(2, 3, 1, 9);
  sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_MS));
  ASSERT_GT(accepted[1], 0u);
  ASSERT_GT(accepted[3], 0u);
  EXPECT_EQ(accepted[3] - accepted[1], 50000000u);  // 50 us, in ps
  EXPECT_EQ(c.word(1, 0x10000), 7u);
  EXPECT_EQ(c.word(3, 0x10000), 9u);
}

// A second protocol stack on the same NIC (issue 38's socket stacks will be such): it sends
// frames of its own EtherType through the node's NIC and takes them from the receive routine,
// while MBCF's traffic goes on beside it.
TEST(ForeignNic, AnotherStackSharesTheConventionalNicByEtherType) {
  Cluster c;
  EtherSystem& sys = *c.sys;
  Calendar& cal = c.cal;
  constexpr uint16_t kOurs = 0x88B6;  // IEEE 802 local experimental 2
  EXPECT_THROW(sys.add_protocol(kEtherType, [](uint32_t, std::vector<uint8_t>&&) { return 0ull; }), std::invalid_argument);
  std::vector<std::vector<uint8_t>> got;
  std::vector<uint64_t> got_at;
  const uint64_t cost = 50000000;  // 50 us of the routine per frame: longer than the frames' spacing
  sys.add_protocol(kOurs, [&](uint32_t node, std::vector<uint8_t>&& f) {
    EXPECT_EQ(node, 1u);
    got.push_back(std::move(f));
    got_at.push_back(cal.now_ps());
    return uint64_t{cost};
  });
  EXPECT_THROW(sys.add_protocol(kOurs, [](uint32_t, std::vector<uint8_t>&&) { return 0ull; }), std::invalid_argument);
  // Node 0's other stack sends 20 frames of its type; its task sends 20 MBCF writes meanwhile.
  std::vector<std::vector<uint8_t>> sent;
  uint32_t left_mac = 0;
  for (uint32_t i = 0; i < 20; ++i) {
    std::vector<uint8_t> f = raw_frame(0, 1, kOurs, 60 + 7 * i, i);
    sent.push_back(f);
    cal.at(i * 20000000ull, [&sys, &left_mac, f]() mutable { sys.nic(0).transmit(1, std::move(f), [&left_mac](bool ok) { left_mac += ok; }); });
  }
  c.stream(0, 1, 20, 100);
  sc_core::sc_start(sc_core::sc_time(100, sc_core::SC_MS));
  EXPECT_EQ(left_mac, 20u);
  ASSERT_EQ(got.size(), 20u);
  for (uint32_t i = 0; i < 20; ++i) EXPECT_EQ(got[i], sent[i]) << "frame " << i;
  // The routine paid each frame's time before it took the next.
  for (uint32_t i = 1; i < 20; ++i) EXPECT_GE(got_at[i] - got_at[i - 1], cost) << "frame " << i;
  for (uint32_t i = 0; i < 20; ++i) EXPECT_EQ(c.word(1, 0x10000 + 4 * i), 100 + i);
  const auto m = c.stats.dump()["system"]["mbcf"];
  EXPECT_EQ(m["malformed"].get<uint64_t>(), 0u);  // none of ours reached MBCF's decoder
  EXPECT_EQ(m["violations"].get<uint64_t>(), 0u);
  EXPECT_TRUE(sys.quiet());
}

// Without a stack for their type, such frames are what they were before: malformed for MBCF.
TEST(ForeignNic, AFrameOfATypeNoStackTookIsMalformed) {
  Cluster c;
  c.cal.at(0, [&c] { c.sys->nic(0).transmit(1, raw_frame(0, 1, 0x88B6, 60, 0), [](bool) {}); });
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS));
  EXPECT_EQ(c.stats.dump()["system"]["mbcf"]["malformed"].get<uint64_t>(), 1u);
}

TEST(ForeignNic, TheConventionalNicIsTheDefaultAndAModule) {
  Cluster c;
  EXPECT_NE(dynamic_cast<ConventionalNic*>(&c.sys->nic(0)), nullptr);
  EXPECT_NE(sc_core::sc_find_object("system.host1.nic"), nullptr);
  EXPECT_NE(sc_core::sc_find_object("system.host1.cpu"), nullptr);
  EXPECT_NE(sc_core::sc_find_object("system.host1.stack"), nullptr);
}

}  // namespace
