#include "models/mbp/directory.h"

#include <algorithm>

namespace mbpsim::mbp {

const char* to_string(DirFormat f) {
  switch (f) {
    case DirFormat::HierBitmap: return "hbitmap";
    case DirFormat::Pointers: return "pointers";
    case DirFormat::FullMap: return "fullmap";
  }
  return "?";
}

void DirectoryFormats::init(SharerSet& s, DirFormat f) const {
  s = SharerSet();
  s.fmt = f;
  if (f == DirFormat::FullMap) s.bits.assign((t_.nodes() + 63) / 64, 0);
}

bool DirectoryFormats::empty(const SharerSet& s) const {
  if (s.fmt == DirFormat::HierBitmap || s.overflowed) return s.hb.empty();
  if (s.fmt == DirFormat::Pointers) return s.ptrs.empty();
  for (uint64_t w : s.bits)
    if (w) return false;
  return true;
}

bool DirectoryFormats::add_coarsens(const SharerSet& s, uint32_t home, uint32_t node) const {
  if (s.fmt != DirFormat::Pointers || s.overflowed || node == home) return false;
  return !std::binary_search(s.ptrs.begin(), s.ptrs.end(), node) && s.ptrs.size() >= pointers_;
}

bool DirectoryFormats::add(SharerSet& s, uint32_t home, uint32_t node) const {
  if (node == home) return false;  // the home's own caches are kept consistent on its bus
  auto add_hb = [&](uint32_t n) {
    const int h = t_.nca_height(home, n);
    s.hb.level[h] |= static_cast<uint16_t>(1u << t_.child_index(n, h));
  };
  switch (s.fmt) {
    case DirFormat::HierBitmap: add_hb(node); return false;
    case DirFormat::FullMap: s.bits[node / 64] |= 1ull << (node % 64); return false;
    case DirFormat::Pointers:
      if (s.overflowed) {
        add_hb(node);
        return false;
      }
      if (std::binary_search(s.ptrs.begin(), s.ptrs.end(), node)) return false;
      if (s.ptrs.size() < pointers_) {
        s.ptrs.insert(std::upper_bound(s.ptrs.begin(), s.ptrs.end(), node), node);
        return false;
      }
      for (uint32_t p : s.ptrs) add_hb(p);
      add_hb(node);
      s.ptrs.clear();
      s.overflowed = true;
      return true;
  }
  return false;
}

bool DirectoryFormats::may_contain(const SharerSet& s, uint32_t home, uint32_t node) const {
  if (node == home) return false;
  if (s.fmt == DirFormat::HierBitmap || s.overflowed) {
    const int h = t_.nca_height(home, node);
    return s.hb.level[h] >> t_.child_index(node, h) & 1;
  }
  if (s.fmt == DirFormat::Pointers) return std::binary_search(s.ptrs.begin(), s.ptrs.end(), node);
  return s.bits[node / 64] >> (node % 64) & 1;
}

void DirectoryFormats::clear(SharerSet& s) const { init(s, s.fmt); }

Delivery DirectoryFormats::plan(const SharerSet& s, uint32_t home, uint32_t skip) const {
  Delivery d;
  if (s.fmt == DirFormat::HierBitmap || s.overflowed) {
    if (s.hb.empty()) return d;
    d.multicast = true;
    d.bitmap = s.hb;
    d.targets = net::covered_count(t_, home, s.hb, 0, t_.levels());
    return d;
  }
  if (s.fmt == DirFormat::Pointers) {
    for (uint32_t n : s.ptrs)
      if (n != skip) d.unicasts.push_back(n);
    d.targets = static_cast<uint32_t>(d.unicasts.size());
    return d;
  }
  std::vector<uint32_t> exact;
  for (uint32_t n = 0; n < t_.nodes(); ++n)
    if (s.bits[n / 64] >> (n % 64) & 1) exact.push_back(n);
  if (exact.empty()) return d;
  const net::HierBitmap bm = net::encode_bitmap(t_, home, exact);
  const uint32_t covered = net::covered_count(t_, home, bm, 0, t_.levels());
  if (covered == exact.size() || exact.size() > unicast_max_) {
    d.multicast = true;
    d.bitmap = bm;
    d.targets = covered;
  } else {
    for (uint32_t n : exact)
      if (n != skip) d.unicasts.push_back(n);
    d.targets = static_cast<uint32_t>(d.unicasts.size());
  }
  return d;
}

std::vector<uint32_t> DirectoryFormats::covered(const SharerSet& s, uint32_t home) const {
  const Delivery d = plan(s, home);
  return d.multicast ? net::covered_nodes(t_, home, d.bitmap) : d.unicasts;
}

uint32_t DirectoryFormats::entry_bits(DirFormat f) const {
  uint32_t id_bits = 1;
  while ((1u << id_bits) < t_.nodes()) ++id_bits;
  switch (f) {
    case DirFormat::HierBitmap: return static_cast<uint32_t>(t_.radix() - 1) * t_.levels();
    case DirFormat::Pointers:  // the pointers and the overflow bitmap share the storage
      return 1 + std::max(pointers_ * id_bits, static_cast<uint32_t>(t_.radix() - 1) * t_.levels());
    case DirFormat::FullMap: return t_.nodes();
  }
  return 0;
}

}  // namespace mbpsim::mbp
