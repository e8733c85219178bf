// A FIFO on a power-of-two ring that grows when full: no allocation in steady state.
#pragma once
#include <cstddef>
#include <vector>

#include "models/core/footprint.h"

namespace mbpsim {

template <class T>
class Ring {
 public:
  void init(size_t cap) {
    buf_.assign(capacity_for(cap), T{});
    mask_ = buf_.size() - 1;
    head_ = n_ = 0;
  }
  // Host memory of a ring initialised to hold `cap` elements.
  static uint64_t bytes(size_t cap) { return vector_bytes<T>(capacity_for(cap)); }
  bool empty() const { return n_ == 0; }
  size_t size() const { return n_; }
  T& front() { return buf_[head_]; }
  const T& front() const { return buf_[head_]; }
  void pop() {
    head_ = (head_ + 1) & mask_;
    --n_;
  }
  void push(const T& v) {
    if (n_ == buf_.size()) grow();
    buf_[(head_ + n_) & mask_] = v;
    ++n_;
  }

 private:
  static size_t capacity_for(size_t cap) {
    size_t c = 1;
    while (c < cap) c <<= 1;
    return c;
  }
  void grow() {
    std::vector<T> nb(buf_.empty() ? 1 : buf_.size() * 2);
    for (size_t i = 0; i < n_; ++i) nb[i] = buf_[(head_ + i) & mask_];
    buf_.swap(nb);
    mask_ = buf_.size() - 1;
    head_ = 0;
  }
  std::vector<T> buf_;
  size_t mask_ = 0;  // capacity - 1 (a power of two)
  size_t head_ = 0, n_ = 0;
};

}  // namespace mbpsim
