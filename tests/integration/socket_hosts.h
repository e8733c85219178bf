// Two cluster hosts with their socket stacks (models/sockets), for the UDP and TCP tests: SS20s
// on 100BASE-TX (the schema's defaults) unless `tweak` changes the configs, the wire's random
// draws (loss, reordering) from `seed`.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/core/module_tree.h"
#include "models/mbcf/ether_system.h"
#include "models/sockets/inet_stack.h"

namespace mbpsim::test {

struct SocketHosts {
  Stats stats;
  Root root;
  Calendar cal{"cal"};
  mbcf::EtherSysConfig ec;
  sockets::SocketConfig sc;
  std::unique_ptr<mbcf::EtherSystem> sys;
  std::vector<std::unique_ptr<sockets::InetStack>> inet;
  explicit SocketHosts(std::function<void(mbcf::EtherSysConfig&, sockets::SocketConfig&)> tweak = nullptr, uint64_t seed = 1) {
    Within in(root);
    ec.nodes = 2;
    if (tweak) tweak(ec, sc);
    sys = std::make_unique<mbcf::EtherSystem>(cal, ec, stats, seed);
    inet = sockets::InetStack::attach(cal, *sys, sc, stats);
  }
  // Host `node`'s stack's statistics (system.host<node>.inet).
  nlohmann::json inet_stats(uint32_t node) { return stats.dump()["system"]["host" + std::to_string(node)]["inet"]; }
};

}  // namespace mbpsim::test
