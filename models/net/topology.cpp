#include "models/net/topology.h"

#include <algorithm>

#include "models/core/error.h"

namespace mbpsim::net {

TreeTopology::TreeTopology(int radix, int levels) : k_(radix), n_(levels) {
  if (radix < 2 || radix > kMaxRadix || levels < 1 || levels > kMaxLevels)
    internal_error("tree topology out of range");
  pow_.resize(n_ + 1);
  pow_[0] = 1;
  for (int i = 1; i <= n_; ++i) pow_[i] = pow_[i - 1] * k_;
  nodes_ = pow_[n_];
  offset_.resize(n_ + 1);
  offset_[0] = 0;
  for (int h = 0; h < n_; ++h) offset_[h + 1] = offset_[h] + pow_[h];
}

int TreeTopology::height_of(int router) const {
  int h = 0;
  while (static_cast<uint32_t>(router) >= offset_[h + 1]) ++h;
  return h;
}

int TreeTopology::nca_height(uint32_t a, uint32_t b) const {
  int h = n_ - 1;
  while (h > 0 && ancestor_pos(a, h) != ancestor_pos(b, h)) --h;
  return h;
}

HierBitmap encode_bitmap(const TreeTopology& t, uint32_t src, const std::vector<uint32_t>& dests) {
  HierBitmap bm;
  for (uint32_t d : dests) {
    if (d == src) continue;
    const int h = t.nca_height(src, d);
    bm.level[h] |= static_cast<uint16_t>(1u << t.child_index(d, h));
  }
  return bm;
}

uint32_t covered_count(const TreeTopology& t, uint32_t src, const HierBitmap& bm, int from_h,
                       int to_h) {
  uint32_t n = 0;
  const uint32_t children = (1u << t.radix()) - 1;
  for (int h = from_h; h < to_h; ++h) {
    const uint32_t bits = bm.level[h] & children & ~(1u << t.child_index(src, h));
    n += __builtin_popcount(bits) * t.subtree_size(h);
  }
  return n;
}

std::vector<uint32_t> covered_nodes(const TreeTopology& t, uint32_t src, const HierBitmap& bm) {
  std::vector<uint32_t> out;
  for (int h = 0; h < t.levels(); ++h) {
    const uint32_t pos = t.ancestor_pos(src, h);
    for (int c = 0; c < t.radix(); ++c) {
      if (!(bm.level[h] >> c & 1) || c == t.child_index(src, h)) continue;
      const uint32_t first = t.subtree_first_node(h, pos, c);
      for (uint32_t i = 0; i < t.subtree_size(h); ++i) out.push_back(first + i);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace mbpsim::net
