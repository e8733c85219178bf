// A FIFO on a power-of-two ring that grows when full: no allocation in steady state. Its
// header is 24 bytes (a pointer and three 32-bit indices), so a record that embeds one (a
// router's output port) keeps its hot fields in one host cache line.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "models/core/footprint.h"

namespace mbpsim {

template <class T>
class Ring {
 public:
  void init(size_t cap) {
    const uint32_t c = capacity_for(cap);
    buf_.reset(new T[c]());
    mask_ = c - 1;
    head_ = n_ = 0;
  }
  // Host memory of a ring initialised to hold `cap` elements.
  static uint64_t bytes(size_t cap) { return heap_bytes(uint64_t{capacity_for(cap)} * sizeof(T)); }
  bool empty() const { return n_ == 0; }
  size_t size() const { return n_; }
  T& front() { return buf_[head_]; }
  const T& front() const { return buf_[head_]; }
  void pop() {
    head_ = (head_ + 1) & mask_;
    --n_;
  }
  void push(const T& v) {
    if (n_ == capacity()) grow();
    buf_[(head_ + n_) & mask_] = v;
    ++n_;
  }

 private:
  uint32_t capacity() const { return buf_ ? mask_ + 1 : 0; }
  static uint32_t capacity_for(size_t cap) {
    uint32_t c = 1;
    while (c < cap) c <<= 1;
    return c;
  }
  void grow() {
    const uint32_t c = buf_ ? 2 * (mask_ + 1) : 1;
    std::unique_ptr<T[]> nb(new T[c]());
    for (uint32_t i = 0; i < n_; ++i) nb[i] = buf_[(head_ + i) & mask_];
    buf_ = std::move(nb);
    mask_ = c - 1;
    head_ = 0;
  }
  std::unique_ptr<T[]> buf_;
  uint32_t mask_ = 0;  // capacity - 1 (a power of two)
  uint32_t head_ = 0, n_ = 0;
};

}  // namespace mbpsim
