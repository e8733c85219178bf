// Host memory a run will hold, predicted from its config before anything is built: each
// component adds what its constructor allocates and what its run will touch (computed from the
// sizes of its own types), so a run too large for the host is refused with the parameters that
// make it large, instead of being found by crashing (docs/PERFORMANCE.md, "Predicted memory").
#pragma once
#include <cstdint>
#include <type_traits>
#include <string>
#include <vector>

namespace mbpsim {

// Heap bytes one allocation of `n` bytes holds (glibc malloc: an 8-byte header, 16-byte
// granules, 32 bytes at least); 0 for n = 0 (an empty std::vector allocates nothing).
constexpr uint64_t heap_bytes(uint64_t n) {
  if (n == 0) return 0;
  const uint64_t c = (n + 8 + 15) / 16 * 16;
  return c < 32 ? 32 : c;
}

// Heap bytes of a std::vector<T> holding `n` elements (capacity n).
template <class T>
constexpr uint64_t vector_bytes(uint64_t n) {
  static_assert(alignof(T) <= 16, "an over-aligned T: use array_bytes for new T[n]");
  return heap_bytes(n * sizeof(T));
}

// Heap bytes of `new T[n]`: a T that is not trivially destructible gets a cookie before the
// elements (the count, padded to T's alignment), and an over-aligned T is allocated with its
// alignment (up to that much more).
template <class T>
constexpr uint64_t array_bytes(uint64_t n) {
  if (n == 0) return 0;
  const uint64_t a = alignof(T) > sizeof(uint64_t) ? alignof(T) : sizeof(uint64_t);
  return heap_bytes(n * sizeof(T) + (std::is_trivially_destructible_v<T> ? 0 : a) + (alignof(T) > 16 ? alignof(T) : 0));
}

// One std::string's heap (the short-string buffer holds up to 15 characters in place).
constexpr uint64_t string_bytes(uint64_t len) { return len > 15 ? heap_bytes(len + 1) : 0; }

// Heap bytes of an empty std::deque<T> (libstdc++ allocates its map of 8 block pointers and one
// block of 512 bytes, or of one element if larger, on construction).
template <class T>
constexpr uint64_t deque_bytes() {
  return heap_bytes(8 * sizeof(void*)) + heap_bytes(sizeof(T) < 512 ? 512 / sizeof(T) * sizeof(T) : sizeof(T));
}

constexpr uint64_t kHostPage = 4096;
constexpr uint64_t round_to_pages(uint64_t n) { return (n + kHostPage - 1) / kHostPage * kHostPage; }

// The addresses a workload's processors touch, as far as the forecast needs them: each busy
// processor `private_bytes` of its own and `shared_bytes` every busy processor may touch (each
// a contiguous run); `busy_procs` processors work (0: every one), spread evenly over the nodes.
// `known` false: the workload cannot say before it runs; the caches are then counted as if
// every line were used and the memory pages are not counted.
struct AddressUse {
  bool known = false;
  uint64_t private_bytes = 0, shared_bytes = 0;
  uint64_t busy_procs = 0;
};

class MemoryForecast {
 public:
  struct Item {
    std::string what;    // "L2 caches"
    uint64_t bytes;      // predicted resident bytes
    uint64_t worst;      // if every lazily zeroed line were used (>= bytes)
    std::string params;  // the parameters it grows with: "node.l2_bytes x node.procs x nodes"
  };
  // Items with the same `what` add up.
  void add(const std::string& what, uint64_t bytes, const std::string& params, uint64_t worst = 0);
  uint64_t total() const;
  uint64_t worst_total() const;
  // Largest first.
  std::vector<Item> items() const;
  // "L2 caches 41.2 MiB (node.l2_bytes x node.procs x nodes), routers 1.3 MiB (...)": the
  // largest items, at most `n`.
  std::string dominant(size_t n = 3) const;

 private:
  std::vector<Item> items_;
};

// "77.3 MiB", "1.50 GiB".
std::string memory_text(uint64_t bytes);

// Physical memory of this host, bytes (0 if unknown).
uint64_t physical_memory_bytes();
// Resident set of this process now, bytes (0 if unknown).
uint64_t resident_bytes_now();
// Whether reading an untouched page of zeroed anonymous memory makes it resident on this host.
// A kernel with a shared zero page maps that instead (no memory); others (some virtual
// machines' kernels) give the page its own frame. Measured once, on 64 pages.
bool reads_make_pages_resident();

}  // namespace mbpsim
