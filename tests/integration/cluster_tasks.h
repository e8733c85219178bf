// The cluster tests' common set-up: task 1 on every node, `pages` read/write pages at 0x10000
// (key 1000 + node), and Ltask m of every task naming task 1 of node m.
#pragma once
#include <cstdint>

#include "models/mbcf/ether_system.h"

namespace mbpsim::test {

inline void one_task_per_node(mbcf::EtherSystem& sys, uint32_t pages) {
  const uint32_t nodes = sys.nodes();
  for (uint32_t n = 0; n < nodes; ++n) {
    mbcf::Task& t = sys.create_task(n, 1, 1000 + n);
    sys.space(n).map(t, 0x10000, pages, mbcf::kPermRW);
  }
  for (uint32_t n = 0; n < nodes; ++n)
    for (uint32_t m = 0; m < nodes; ++m) sys.set_ltask(n, 1, m, m, 1);
}

}  // namespace mbpsim::test
