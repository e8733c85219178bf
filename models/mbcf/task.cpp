#include "models/mbcf/task.h"

#include "models/core/mutant.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <stdexcept>

#include "models/core/error.h"
#include "models/mbcf/atomic.h"

namespace mbpsim::mbcf {

TaskSpace::TaskSpace(sc_core::sc_module_name name, uint32_t pnode, uint32_t page_bytes)
    : sc_core::sc_module(name), pnode_(pnode), page_bytes_(page_bytes) {
  if (page_bytes == 0 || (page_bytes & (page_bytes - 1))) throw std::invalid_argument("page size must be a power of two");
}

Task& TaskSpace::create_task(uint32_t ptask, uint32_t key) {
  auto t = std::make_unique<Task>();
  t->ptask = ptask;
  t->key = key;
  Task& r = *t;
  tasks_[ptask] = std::move(t);
  moved_.erase(ptask);
  return r;
}

Task* TaskSpace::find(uint32_t ptask) {
  auto it = tasks_.find(ptask);
  return it == tasks_.end() ? nullptr : it->second.get();
}
const Task* TaskSpace::find(uint32_t ptask) const {
  auto it = tasks_.find(ptask);
  return it == tasks_.end() ? nullptr : it->second.get();
}

std::unique_ptr<Task> TaskSpace::remove(uint32_t ptask) {
  auto it = tasks_.find(ptask);
  if (it == tasks_.end()) return nullptr;
  auto t = std::move(it->second);
  tasks_.erase(it);
  return t;
}

void TaskSpace::adopt(std::unique_ptr<Task> t) {
  moved_.erase(t->ptask);
  tasks_[t->ptask] = std::move(t);
}

void TaskSpace::set_frame_source(std::function<uint8_t*(uint32_t)> src) {
  if (!frames_.empty()) throw std::logic_error("node " + std::to_string(pnode_) + ": the host memory changed after frames were allocated");
  source_ = std::move(src);
}

uint32_t TaskSpace::alloc_frame() {
  const uint32_t f = static_cast<uint32_t>(frames_.size());
  if (source_) {
    frames_.push_back(source_(f));
  } else {
    owned_.push_back(std::make_unique<uint8_t[]>(page_bytes_));
    frames_.push_back(owned_.back().get());
  }
  std::memset(frames_.back(), 0, page_bytes_);
  return f;
}

void TaskSpace::map(Task& t, uint32_t laddr, uint32_t pages, uint8_t perm) {
  for (uint32_t i = 0; i < pages; ++i) {
    Pte p;
    p.frame = alloc_frame();
    p.perm = perm;
    t.pages[page_of(laddr) + i] = p;
  }
}

void TaskSpace::alias(Task& from, uint32_t from_laddr, Task& to, uint32_t to_laddr, uint32_t pages, uint8_t perm) {
  for (uint32_t i = 0; i < pages; ++i) {
    auto it = from.pages.find(page_of(from_laddr) + i);
    if (it == from.pages.end()) throw std::invalid_argument("alias of an unmapped page");
    Pte p;
    p.frame = it->second.frame;
    p.perm = perm;
    to.pages[page_of(to_laddr) + i] = p;
  }
}

void TaskSpace::set_present(Task& t, uint32_t laddr, bool present) {
  auto it = t.pages.find(page_of(laddr));
  if (it != t.pages.end()) it->second.present = present;
}

ViolationCode TaskSpace::check(const Task& t, uint32_t laddr, uint32_t n, uint8_t perm, bool* present_ok,
                               uint32_t* fault_page) const {
  if (present_ok) *present_ok = true;
  if (n == 0) return ViolationCode::None;
  if (static_cast<uint64_t>(laddr) + n > 0x100000000ull) return ViolationCode::Unmapped;
  const uint32_t first = page_of(laddr), last = mutant::on(mutant::Id::CheckFirstPageOnly) ? first : page_of(laddr + n - 1);
  for (uint32_t pg = first; pg <= last; ++pg) {
    auto it = t.pages.find(pg);
    if (it == t.pages.end()) return ViolationCode::Unmapped;
    if ((it->second.perm & perm) != perm) return ViolationCode::Protection;
    if (!it->second.present && present_ok && *present_ok) {
      *present_ok = false;
      if (fault_page) *fault_page = pg;
    }
  }
  return ViolationCode::None;
}

uint64_t TaskSpace::phys(const Task& t, uint32_t laddr) const {
  const uint32_t vp = page_of(laddr);
  const Pte& p = t.pages.at(vp);
  const uint32_t f = map_ ? map_->frame(t, vp, p) : p.frame;
  if (f >= frames_.size()) throw std::out_of_range("no such frame");
  return static_cast<uint64_t>(f) * page_bytes_ + (laddr & (page_bytes_ - 1));
}

uint8_t* TaskSpace::phys_bytes(uint64_t pa, uint32_t n) const {
  if (pa / page_bytes_ >= frames_.size() || pa % page_bytes_ + n > page_bytes_) return nullptr;
  return frames_[pa / page_bytes_] + pa % page_bytes_;
}

void TaskSpace::read(const Task& t, uint32_t laddr, uint8_t* out, uint32_t n) const {
  while (n) {
    const uint32_t in_page = page_bytes_ - (laddr & (page_bytes_ - 1));
    const uint32_t k = n < in_page ? n : in_page;
    const uint64_t pa = phys(t, laddr);
    std::memcpy(out, phys_bytes(pa, k), k);
    if (wb_) wb_->overlay(pa, out, k);
    out += k;
    laddr += k;
    n -= k;
  }
}

void TaskSpace::write(Task& t, uint32_t laddr, const uint8_t* in, uint32_t n) {
  while (n) {
    const uint32_t in_page = page_bytes_ - (laddr & (page_bytes_ - 1));
    const uint32_t k = n < in_page ? n : in_page;
    const uint64_t pa = phys(t, laddr);
    if (wb_ && !mutant::on(mutant::Id::AdmaWritesAtExecute)) wb_->add(pa, t.ptask, laddr, in, k, (laddr & (page_bytes_ - 1)) == 0);
    else std::memcpy(phys_bytes(pa, k), in, k);
    in += k;
    laddr += k;
    n -= k;
  }
}

bool TaskSpace::discard_buffered() {
  if (!wb_ || mutant::on(mutant::Id::AdmaWritesAtExecute)) return false;
  wb_->discard_untaken();
  return true;
}

void WriteBuffer::add(uint64_t pa, uint32_t ptask, uint32_t laddr, const uint8_t* p, uint32_t n, bool page_start) {
  if (writes_.size() > join_from_ && !page_start) {
    Write& w = writes_.back();
    if (w.ptask == ptask && w.pa + w.bytes.size() == pa && w.laddr + w.bytes.size() == laddr && w.bytes.size() + n <= max_) {
      w.bytes.insert(w.bytes.end(), p, p + n);
      return;
    }
  }
  if (n > max_) internal_error("a buffered host write of " + std::to_string(n) + " bytes exceeds the DMA's " + std::to_string(max_));
  writes_.push_back(Write{pa, ptask, laddr, std::vector<uint8_t>(p, p + n)});
}

void WriteBuffer::overlay(uint64_t pa, uint8_t* out, uint32_t n) const {
  for (const Write& w : writes_) {
    const uint64_t lo = std::max(pa, w.pa), hi = std::min(pa + n, w.pa + w.bytes.size());
    if (lo < hi) std::memcpy(out + (lo - pa), w.bytes.data() + (lo - w.pa), hi - lo);
  }
}

bool WriteBuffer::retire(Write* w) {
  if (writes_.empty()) return false;
  if (w) *w = std::move(writes_.front());
  writes_.pop_front();
  if (taken_) --taken_;
  if (join_from_) --join_from_;
  return true;
}

uint32_t TaskSpace::load32(const Task& t, uint32_t laddr) const {
  uint8_t b[4];
  read(t, laddr, b, 4);
  return static_cast<uint32_t>(load_le(b, 4));
}

void TaskSpace::store32(Task& t, uint32_t laddr, uint32_t v) {
  uint8_t b[4];
  store_le(b, 4, v);
  write(t, laddr, b, 4);
}

const Moved* TaskSpace::moved(uint32_t ptask) const {
  auto it = moved_.find(ptask);
  return it == moved_.end() ? nullptr : &it->second;
}

}  // namespace mbpsim::mbcf
