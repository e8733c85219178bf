// The pseudo-fullmap directory (thesis 2.5): one sharer set per page at the home node, in one
// of three formats chosen per page (docs/ARCHITECTURE.md says why these three):
//  - HierBitmap: Figures 2.5-2.6, one k-bit map per tree level on the home's path to the root;
//    imprecise below that path, delivered by hierarchical multicast with ack combining;
//  - Pointers: up to P exact node ids, delivered by unicasts with one ack each; the P+1-th
//    sharer turns the entry into a hierarchical bitmap (counted), never while a round of the
//    page is in flight;
//  - FullMap: one bit per node, exact; each action picks the cheaper delivery: multicast when
//    the bitmap of the exact set reaches no one else, unicasts when the set is small, else a
//    multicast that also reaches the bitmap's extra nodes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/net/topology.h"

namespace mbpsim::mbp {

enum class DirFormat : uint8_t { HierBitmap = 0, Pointers = 1, FullMap = 2 };
const char* to_string(DirFormat f);

struct SharerSet {
  DirFormat fmt = DirFormat::HierBitmap;
  bool overflowed = false;  // Pointers that turned into a hierarchical bitmap
  net::HierBitmap hb;
  std::vector<uint32_t> ptrs;   // Pointers: sorted node ids
  std::vector<uint64_t> bits;   // FullMap
};

// How one coherence action (invalidate or update round) reaches the sharers.
struct Delivery {
  bool multicast = false;
  net::HierBitmap bitmap;           // multicast: relative to the home
  std::vector<uint32_t> unicasts;   // unicast targets
  uint32_t targets = 0;             // receivers that will answer (covered nodes or unicasts)
};

class DirectoryFormats {
 public:
  DirectoryFormats(const net::TreeTopology& t, uint32_t pointers, uint32_t fullmap_unicast_max)
      : t_(t), pointers_(pointers), unicast_max_(fullmap_unicast_max) {}
  void init(SharerSet& s, DirFormat f) const;
  bool empty(const SharerSet& s) const;
  // Whether adding `node` would make the set less precise (Pointers overflowing).
  bool add_coarsens(const SharerSet& s, uint32_t home, uint32_t node) const;
  // Adds a sharer; returns true when the entry overflowed into a bitmap.
  bool add(SharerSet& s, uint32_t home, uint32_t node) const;
  bool may_contain(const SharerSet& s, uint32_t home, uint32_t node) const;
  void clear(SharerSet& s) const;
  // `skip`: a node left out of unicast deliveries (the requester of an exclusive copy, which
  // keeps its shared copy and upgrades); multicasts cannot leave anyone out.
  Delivery plan(const SharerSet& s, uint32_t home, uint32_t skip = UINT32_MAX) const;
  // Nodes the set names or covers (for checkers and dumps).
  std::vector<uint32_t> covered(const SharerSet& s, uint32_t home) const;
  // Directory storage of one entry in bits (for the docs and stats).
  uint32_t entry_bits(DirFormat f) const;

 private:
  const net::TreeTopology& t_;
  uint32_t pointers_, unicast_max_;
};

}  // namespace mbpsim::mbp
