// Set-associative arrays with LRU replacement: the data caches (L1, L2), which hold real
// bytes, and the translation buffers (P-TLB, C-TLB, N-TLB), which hold one value per entry.
// A lookup is a few compares and no allocation: cache hits are the processor's hot path.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sys/mman.h>
#include <vector>

#include "models/core/footprint.h"

namespace mbpsim::node {

class Cache {
 public:
  // A line's header; its bytes follow it in the same record. Records are 64-byte aligned and
  // padded to a multiple of 64, so a 32-byte block and its tag share one host cache line: a
  // hit touches one host line, not a tag array and a data array (256 simulated processors'
  // caches do not fit in the host's caches).
  struct Line {
    uint64_t blk;    // block number (address / block size)
    uint32_t lru;    // last use (per-cache clock)
    uint32_t link;   // the owner's: an L1 line keeps the index of its block's line in the L2
    uint8_t state;   // 0: invalid; other values are the owner's
  };
  // An array of kMapBytes or more is mapped from the kernel, which hands out zero pages lazily,
  // so a large cache that a run touches little costs little host memory (256 processors with
  // 1 MiB L2s are common), and unmapping returns it in one call. It does not go through the
  // allocator: glibc's calloc maps only below a threshold that rises after each free of a
  // mapped chunk (up to 32 MiB), and an allocator that checks memory (AddressSanitizer)
  // writes a poison mark over each freed byte's shadow: 4 GiB of it for sixteen 1 GiB L2s,
  // half a minute to tear down a machine that never ran. A smaller array comes from calloc.
  static constexpr uint64_t kMapBytes = 128 * 1024;
  Cache(uint32_t bytes, uint32_t assoc, uint32_t block)
      : assoc_(assoc), sets_(bytes / block / assoc), nlines_(bytes / block),
        stride_((sizeof(Line) + block + 63) / 64 * 64), raw_bytes_(nlines_ * stride_ + 64) {
    if (raw_bytes_ >= kMapBytes) {
      void* p = mmap(nullptr, raw_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      raw_ = static_cast<uint8_t*>(p);
    } else {
      raw_ = static_cast<uint8_t*>(std::calloc(raw_bytes_, 1));
      if (!raw_) throw std::bad_alloc();
    }
    base_ = raw_ + (64 - reinterpret_cast<uintptr_t>(raw_) % 64) % 64;
  }
  ~Cache() {
    if (raw_bytes_ >= kMapBytes) {
      munmap(raw_, raw_bytes_);
    } else {
      std::free(raw_);
    }
  }
  // Host memory of a cache of this geometry whose processor touches `blocks` distinct blocks
  // (contiguous runs of addresses, so as many consecutive sets). A mapped array is untouched
  // zero pages and becomes resident a page at a time, as lines are filled; a smaller one is
  // carved from the heap and counted whole. `worst`: every line filled.
  static uint64_t footprint_bytes(uint64_t bytes, uint64_t assoc, uint64_t block, uint64_t blocks, uint64_t* worst = nullptr) {
    const uint64_t stride = (sizeof(Line) + block + 63) / 64 * 64, lines = bytes / block, sets = lines / assoc;
    const uint64_t array = lines * stride + 64;
    if (array < kMapBytes) {
      if (worst) *worst = heap_bytes(array);
      return heap_bytes(array);
    }
    if (worst) *worst = round_to_pages(array);
    return std::min(round_to_pages(array), round_to_pages(std::min(blocks, sets) * assoc * stride));
  }
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;
  Line* find(uint64_t blk) {
    uint8_t* s = base_ + (blk & (sets_ - 1)) * assoc_ * stride_;
    for (uint32_t w = 0; w < assoc_; ++w, s += stride_) {
      Line* l = reinterpret_cast<Line*>(s);
      if (l->blk == blk && l->state) return l;
    }
    return nullptr;
  }
  // Ask the host to bring the records of `blk`'s set into its caches (a hint: see MemOp::ahead):
  // every way of it, up to four (past a set of three, the fourth line is the next set's).
  // Always inlined: out of line, gcc finds it free of side effects and deletes its calls.
  [[gnu::always_inline]] void prefetch(uint64_t blk) const {
    const uint8_t* s = base_ + (blk & (sets_ - 1)) * assoc_ * stride_;
    __builtin_prefetch(s, 1);
    if (assoc_ < 2) return;
    __builtin_prefetch(s + stride_, 1);
    if (assoc_ < 3) return;
    __builtin_prefetch(s + 2 * stride_, 1);
    __builtin_prefetch(s + 3 * stride_, 1);
  }
  void touch(Line* l) {
    if (++clock_ == 0) {  // the clock wrapped: restart every age from zero (order is lost once)
      for (uint64_t i = 0; i < nlines_; ++i) line(i)->lru = 0;
      clock_ = 1;
    }
    l->lru = clock_;
  }
  // The line a fill of `blk` replaces: an invalid one if any, else the least recently used.
  Line* victim(uint64_t blk) {
    uint8_t* s = base_ + (blk & (sets_ - 1)) * assoc_ * stride_;
    Line* v = reinterpret_cast<Line*>(s);
    for (uint32_t w = 0; w < assoc_; ++w, s += stride_) {
      Line* l = reinterpret_cast<Line*>(s);
      if (!l->state) return l;
      if (l->lru < v->lru) v = l;
    }
    return v;
  }
  static uint8_t* data(Line* l) { return reinterpret_cast<uint8_t*>(l) + sizeof(Line); }
  // A line's place in the array, and the line at a place: a hint another structure keeps (the
  // caller checks that the line still holds what it expects).
  uint32_t index_of(const Line* l) const {
    return static_cast<uint32_t>((reinterpret_cast<const uint8_t*>(l) - base_) / stride_);
  }
  Line* at(uint32_t i) { return i < nlines_ ? line(i) : nullptr; }

 private:
  Line* line(uint64_t i) { return reinterpret_cast<Line*>(base_ + i * stride_); }
  uint32_t assoc_;
  uint64_t sets_, nlines_, stride_;
  uint64_t raw_bytes_;
  uint8_t* raw_ = nullptr;
  uint8_t* base_ = nullptr;
  uint32_t clock_ = 0;
};

class Tlb {
 public:
  Tlb(uint32_t entries, uint32_t assoc) : assoc_(assoc), sets_(entries / assoc), e_(entries) {}
  static uint64_t footprint_bytes(uint64_t entries) { return vector_bytes<Entry>(entries); }
  bool lookup(uint64_t page, uint64_t* value) {
    // The most recent hit first: references cluster in pages, and a fully associative TLB
    // would otherwise scan every entry. Same result, fewer compares.
    if (mru_ && mru_->valid && mru_->page == page) {
      mru_->lru = ++clock_;
      if (value) *value = mru_->value;
      return true;
    }
    Entry* s = &e_[(page & (sets_ - 1)) * assoc_];
    for (uint32_t w = 0; w < assoc_; ++w)
      if (s[w].valid && s[w].page == page) {
        s[w].lru = ++clock_;
        if (value) *value = s[w].value;
        mru_ = &s[w];
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
  Entry* mru_ = nullptr;
  uint64_t clock_ = 0;
};

}  // namespace mbpsim::node
