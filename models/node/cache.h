// Set-associative arrays with LRU replacement: the data caches (L1, L2), which hold real
// bytes, and the translation buffers (P-TLB, C-TLB, N-TLB), which hold one value per entry.
// A lookup is a few compares and no allocation: cache hits are the processor's hot path.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

namespace mbpsim::node {

class Cache {
 public:
  struct Line {
    uint64_t blk = 0;    // block number (address / block size)
    uint64_t lru = 0;    // last use
    uint8_t state = 0;   // 0: invalid; other values are the owner's
  };
  Cache(uint32_t bytes, uint32_t assoc, uint32_t block)
      : assoc_(assoc), block_(block), sets_(bytes / block / assoc), lines_(bytes / block),
        data_(static_cast<size_t>(bytes)) {}
  Line* find(uint64_t blk) {
    Line* s = &lines_[(blk & (sets_ - 1)) * assoc_];
    for (uint32_t w = 0; w < assoc_; ++w)
      if (s[w].state && s[w].blk == blk) return &s[w];
    return nullptr;
  }
  void touch(Line* l) { l->lru = ++clock_; }
  // The line a fill of `blk` replaces: an invalid one if any, else the least recently used.
  Line* victim(uint64_t blk) {
    Line* s = &lines_[(blk & (sets_ - 1)) * assoc_];
    Line* v = &s[0];
    for (uint32_t w = 0; w < assoc_; ++w) {
      if (!s[w].state) return &s[w];
      if (s[w].lru < v->lru) v = &s[w];
    }
    return v;
  }
  uint8_t* data(const Line* l) { return &data_[static_cast<size_t>(l - lines_.data()) * block_]; }
  template <class F>
  void for_each_valid(F f) {
    for (auto& l : lines_)
      if (l.state) f(l);
  }

 private:
  uint32_t assoc_, block_;
  uint64_t sets_;
  std::vector<Line> lines_;
  std::vector<uint8_t> data_;
  uint64_t clock_ = 0;
};

class Tlb {
 public:
  Tlb(uint32_t entries, uint32_t assoc) : assoc_(assoc), sets_(entries / assoc), e_(entries) {}
  bool lookup(uint64_t page, uint64_t* value) {
    Entry* s = &e_[(page & (sets_ - 1)) * assoc_];
    for (uint32_t w = 0; w < assoc_; ++w)
      if (s[w].valid && s[w].page == page) {
        s[w].lru = ++clock_;
        if (value) *value = s[w].value;
        return true;
      }
    return false;
  }
  void insert(uint64_t page, uint64_t value) {
    Entry* s = &e_[(page & (sets_ - 1)) * assoc_];
    Entry* v = &s[0];
    for (uint32_t w = 0; w < assoc_; ++w) {
      if (s[w].valid && s[w].page == page) { v = &s[w]; break; }
      if (!s[w].valid) { v = &s[w]; break; }
      if (s[w].lru < v->lru) v = &s[w];
    }
    *v = Entry{page, value, ++clock_, true};
  }
  void invalidate(uint64_t page) {
    Entry* s = &e_[(page & (sets_ - 1)) * assoc_];
    for (uint32_t w = 0; w < assoc_; ++w)
      if (s[w].valid && s[w].page == page) s[w].valid = false;
  }

 private:
  struct Entry {
    uint64_t page = 0, value = 0, lru = 0;
    bool valid = false;
  };
  uint32_t assoc_;
  uint64_t sets_;
  std::vector<Entry> e_;
  uint64_t clock_ = 0;
};

}  // namespace mbpsim::node
