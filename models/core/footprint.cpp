#include "models/core/footprint.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace mbpsim {

void MemoryForecast::add(const std::string& what, uint64_t bytes, const std::string& params, uint64_t worst) {
  worst = std::max(worst, bytes);
  for (auto& i : items_)
    if (i.what == what) {
      i.bytes += bytes;
      i.worst += worst;
      return;
    }
  items_.push_back(Item{what, bytes, worst, params});
}

uint64_t MemoryForecast::total() const {
  uint64_t t = 0;
  for (const auto& i : items_) t += i.bytes;
  return t;
}

uint64_t MemoryForecast::worst_total() const {
  uint64_t t = 0;
  for (const auto& i : items_) t += i.worst;
  return t;
}

std::vector<MemoryForecast::Item> MemoryForecast::items() const {
  std::vector<Item> v = items_;
  std::stable_sort(v.begin(), v.end(), [](const Item& a, const Item& b) { return a.bytes > b.bytes; });
  return v;
}

std::string MemoryForecast::dominant(size_t n) const {
  std::string s;
  for (const auto& i : items()) {
    if (n-- == 0) break;
    if (!s.empty()) s += ", ";
    s += i.what + " " + memory_text(i.bytes);
    if (!i.params.empty()) s += " (" + i.params + ")";
  }
  return s;
}

std::string memory_text(uint64_t bytes) {
  char b[48];
  const double v = static_cast<double>(bytes);
  if (v >= 1024.0 * 1024 * 1024) std::snprintf(b, sizeof b, "%.2f GiB", v / (1024.0 * 1024 * 1024));
  else if (v >= 1024.0 * 1024) std::snprintf(b, sizeof b, "%.1f MiB", v / (1024.0 * 1024));
  else std::snprintf(b, sizeof b, "%.1f KiB", v / 1024.0);
  return b;
}

uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(size) : 0;
}

bool reads_make_pages_resident() {
  static const bool yes = [] {
    constexpr size_t kPages = 64;
    const size_t len = kPages * kHostPage;
    void* m = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return true;
    const uint64_t before = resident_bytes_now();
    unsigned sum = 0;
    for (size_t i = 0; i < kPages; ++i) sum += static_cast<volatile unsigned char*>(m)[i * kHostPage];
    const uint64_t after = resident_bytes_now();
    ::munmap(m, len);
    return sum == 0 && after >= before + len / 2;
  }();
  return yes;
}

uint64_t resident_bytes_now() {
  std::ifstream f("/proc/self/statm");
  uint64_t total = 0, resident = 0;
  if (!(f >> total >> resident)) return 0;
  const long size = ::sysconf(_SC_PAGESIZE);
  return resident * static_cast<uint64_t>(size > 0 ? size : 4096);
}

}  // namespace mbpsim
