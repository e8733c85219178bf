// k-ary tree arithmetic shared by the router, the network and the directory formats.
//
// Nodes 0..k^n-1 attach at the leaves. Routers sit at heights 0 (the root) to n-1 (leaf
// routers, whose children are nodes). A router at height h and position pos has children
// ports 0..k-1 and, unless it is the root, a parent port k. Node ids read as n base-k digits,
// most significant first: digit h is the child index taken at the height-h router.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace mbpsim::net {

constexpr int kMaxLevels = 12;  // 4096 nodes at k = 2
constexpr int kMaxRadix = 16;

class TreeTopology {
 public:
  TreeTopology(int radix, int levels);
  int radix() const { return k_; }
  int levels() const { return n_; }
  uint32_t nodes() const { return nodes_; }
  int num_routers() const { return static_cast<int>(offset_.back()); }

  int router_id(int height, uint32_t pos) const { return static_cast<int>(offset_[height] + pos); }
  int height_of(int router) const;
  uint32_t pos_of(int router) const { return router - offset_[height_of(router)]; }
  // Position of the height-h ancestor router of a node.
  uint32_t ancestor_pos(uint32_t node, int h) const { return node / pow_[n_ - h]; }
  // Child port of the height-h ancestor that leads towards the node.
  int child_index(uint32_t node, int h) const { return (node / pow_[n_ - 1 - h]) % k_; }
  bool in_subtree(uint32_t node, int router) const {
    const int h = height_of(router);
    return ancestor_pos(node, h) == pos_of(router);
  }
  // Height of the nearest common ancestor of two nodes.
  int nca_height(uint32_t a, uint32_t b) const;
  // Routers a unicast from a to b passes through (a == b: 1, the leaf router).
  int routers_on_path(uint32_t a, uint32_t b) const { return 2 * (n_ - 1 - nca_height(a, b)) + 1; }
  // Nodes under the height-h router's child port c (h = n-1: a single node).
  uint32_t subtree_first_node(int h, uint32_t pos, int c) const {
    return (pos * k_ + c) * pow_[n_ - 1 - h];
  }
  uint32_t subtree_size(int h) const { return pow_[n_ - 1 - h]; }

 private:
  int k_, n_;
  uint32_t nodes_;
  std::vector<uint32_t> pow_;     // k^i
  std::vector<uint32_t> offset_;  // first router id of each height; back() = count
};

// The hierarchical bitmap of Figures 2.5-2.6: for each router on the path from the source to
// the root (height n-1 .. 0) one k-bit map of the child links enrolled. A bit above the leaf
// level enrols a whole subtree (the map carries no finer information there). The bit of the
// link leading back towards the source (the "X" bit) is never set.
struct HierBitmap {
  std::array<uint16_t, kMaxLevels> level{};  // level[h]: bitmap at the height-h ancestor
  bool empty() const {
    for (auto b : level)
      if (b) return false;
    return true;
  }
  bool operator==(const HierBitmap& o) const { return level == o.level; }
};

HierBitmap encode_bitmap(const TreeTopology& t, uint32_t src, const std::vector<uint32_t>& dests);
// Number of nodes the bitmap reaches through the levels [from_h, to_h) of the source's path.
uint32_t covered_count(const TreeTopology& t, uint32_t src, const HierBitmap& bm, int from_h,
                       int to_h);
// Every node the bitmap reaches (sorted), i.e. the destinations plus the imprecision.
std::vector<uint32_t> covered_nodes(const TreeTopology& t, uint32_t src, const HierBitmap& bm);

}  // namespace mbpsim::net
