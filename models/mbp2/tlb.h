// The card's TLB: context-tagged translation of task addresses to host physical pages (8.2).
#pragma once
#include "models/mbp2/unit.h"

namespace mbpsim::mbp2 {

// Logical (context, page) to host physical page. Fully associative, least recently used
// replacement; every entry carries its context ID, so several address spaces share it.
class Tlb : public Unit {
 public:
  Tlb(uint32_t entries, Stats& st, const std::string& name);
  // True on a hit (and the entry becomes most recent).
  bool lookup(uint32_t ctx, uint64_t vpage, uint64_t* ppage = nullptr);
  // What an engine's transfer finds there as it moves the bytes: no statistics, no LRU update
  // (lookup, by the timing path, counted the access).
  bool probe(uint32_t ctx, uint64_t vpage, uint64_t* ppage) const;
  void insert(uint32_t ctx, uint64_t vpage, uint64_t ppage);
  void flush_context(uint32_t ctx);
  void clear();  // every entry (the NIC lost its power)
  // Drops one translation; true if it was there.
  bool invalidate(uint32_t ctx, uint64_t vpage);
  uint32_t size() const { return static_cast<uint32_t>(lru_.size()); }

 private:
  struct Entry {
    uint32_t ctx;
    uint64_t vpage, ppage;
  };
  static uint64_t key(uint32_t ctx, uint64_t vpage) { return (static_cast<uint64_t>(ctx) << 44) ^ vpage; }
  uint32_t entries_;
  std::list<Entry> lru_;  // front: most recent
  std::unordered_map<uint64_t, std::list<Entry>::iterator> map_;
  Counter &hits_, &misses_, &evictions_;
};

}  // namespace mbpsim::mbp2
