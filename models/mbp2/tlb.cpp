#include "models/mbp2/tlb.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"

namespace mbpsim::mbp2 {

Tlb::Tlb(uint32_t entries, Stats& st, const std::string& n)
    : Unit(n),
      entries_(entries),
      hits_(st.counter(n + ".hits", "translations found in the TLB")),
      misses_(st.counter(n + ".misses", "translations missing: the PME refills from the page tables in EM")),
      evictions_(st.counter(n + ".evictions", "entries replaced (least recently used)")) {
  if (entries_ == 0) internal_error("a TLB needs at least one entry");
}

bool Tlb::lookup(uint32_t ctx, uint64_t vpage, uint64_t* ppage) {
  auto it = map_.find(key(ctx, vpage));
  if (it == map_.end() || it->second->ctx != ctx || it->second->vpage != vpage) {
    misses_.inc();
    return false;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  if (ppage) *ppage = it->second->ppage;
  hits_.inc();
  return true;
}

void Tlb::insert(uint32_t ctx, uint64_t vpage, uint64_t ppage) {
  const uint64_t k = key(ctx, vpage);
  auto it = map_.find(k);
  if (it != map_.end()) {
    it->second->ppage = ppage;
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  if (lru_.size() == entries_) {
    map_.erase(key(lru_.back().ctx, lru_.back().vpage));
    lru_.pop_back();
    evictions_.inc();
  }
  lru_.push_front(Entry{ctx, vpage, ppage});
  map_[k] = lru_.begin();
}

bool Tlb::probe(uint32_t ctx, uint64_t vpage, uint64_t* ppage) const {
  auto it = map_.find(key(ctx, vpage));
  if (it == map_.end() || it->second->ctx != ctx || it->second->vpage != vpage) return false;
  *ppage = it->second->ppage;
  return true;
}

void Tlb::clear() {
  lru_.clear();
  map_.clear();
}

bool Tlb::invalidate(uint32_t ctx, uint64_t vpage) {
  auto it = map_.find(key(ctx, vpage));
  if (it == map_.end()) return false;
  lru_.erase(it->second);
  map_.erase(it);
  return true;
}

void Tlb::flush_context(uint32_t ctx) {
  for (auto it = lru_.begin(); it != lru_.end();) {
    if (it->ctx == ctx) {
      map_.erase(key(it->ctx, it->vpage));
      it = lru_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace mbpsim::mbp2
