// The cluster tests' common set-up: task 1 on every node, `pages` read/write pages at 0x10000
// (key 1000 + node), and Ltask m of every task naming task 1 of node m; and the word writes
// they stream over it.
#pragma once
#include <gtest/gtest.h>

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

// An MBCF_WRITE of the word `v` at `laddr` of Ltask `to`.
inline mbcf::Request word_write(uint32_t to, uint32_t laddr, uint32_t v) {
  mbcf::Request r;
  r.ltask = to;
  r.cmds.push_back(mbcf::word_command(mbcf::Cmd::Write, laddr, v));
  return r;
}

// Task 1 of `from` writes words 0x10000, 0x10004, ... of `to` with v0, v0 + 1, ..., one system
// call after the other.
inline void stream_writes(mbcf::EtherSystem& sys, uint32_t from, uint32_t to, uint32_t n, uint32_t v0, uint32_t i = 0) {
  if (i == n) return;
  ASSERT_TRUE(sys.syscall(from, 1, word_write(to, 0x10000 + 4 * i, v0 + i), [&sys, from, to, n, v0, i] {
    stream_writes(sys, from, to, n, v0, i + 1);
  }));
}

// The word at `laddr` of task 1 on `node`.
inline uint32_t task_word(mbcf::EtherSystem& sys, uint32_t node, uint32_t laddr) {
  return sys.space(node).load32(*sys.space(node).find(1), laddr);
}

}  // namespace mbpsim::test
