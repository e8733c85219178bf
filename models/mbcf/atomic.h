// The semantics of the MBCF atomic commands (thesis 4.1: MBCF_SWAP, MBCF_FETCH_ADD and its
// vector form, MBCF_COMP_SWAP), written once. The MBP executes them at cache-block grain at
// the home node; MBCF/Ether and the MBP2 NIC execute the same functions on a task's memory.
// Who runs them and how long that takes is the caller's business.
#pragma once
#include <cstdint>
#include <cstring>

namespace mbpsim::mbcf {

enum class AtomicOp : uint8_t { Swap, FetchAdd, FetchAddVec, CompSwap };

inline const char* to_string(AtomicOp op) {
  switch (op) {
    case AtomicOp::Swap: return "swap";
    case AtomicOp::FetchAdd: return "fetch_add";
    case AtomicOp::FetchAddVec: return "fetch_add_vec";
    case AtomicOp::CompSwap: return "comp_swap";
  }
  return "?";
}

// One atomic request. Elements are little-endian unsigned integers of `width` bytes (4 or 8);
// FetchAddVec works on `count` consecutive elements, the others on one.
struct AtomicArgs {
  AtomicOp op = AtomicOp::Swap;
  uint8_t width = 8;
  uint8_t count = 1;
  uint64_t operand[8] = {};  // Swap: new value; FetchAdd(Vec): addends; CompSwap: new value
  uint64_t compare = 0;      // CompSwap: expected old value
  uint32_t bytes() const { return static_cast<uint32_t>(width) * (op == AtomicOp::FetchAddVec ? count : 1); }
};

inline uint64_t load_le(const uint8_t* p, int width) {
  uint64_t v = 0;
  std::memcpy(&v, p, width);  // hosts are little-endian (checked at build time below)
  return v;
}
inline void store_le(uint8_t* p, int width, uint64_t v) { std::memcpy(p, &v, width); }
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "byte images assume a little-endian host");

inline uint64_t mask_of(int width) { return width >= 8 ? ~0ull : ((1ull << (8 * width)) - 1); }

// Executes the command on `mem` (the target bytes, bytes() long). Writes the old contents to
// `old` (bytes() long). Returns whether memory changed (CompSwap may leave it alone).
inline bool apply_atomic(const AtomicArgs& a, uint8_t* mem, uint8_t* old) {
  const uint32_t n = a.bytes();
  std::memcpy(old, mem, n);
  const uint64_t m = mask_of(a.width);
  switch (a.op) {
    case AtomicOp::Swap: store_le(mem, a.width, a.operand[0] & m); return true;
    case AtomicOp::FetchAdd:
      store_le(mem, a.width, (load_le(mem, a.width) + a.operand[0]) & m);
      return true;
    case AtomicOp::FetchAddVec:
      for (int i = 0; i < a.count; ++i)
        store_le(mem + i * a.width, a.width, (load_le(mem + i * a.width, a.width) + a.operand[i]) & m);
      return true;
    case AtomicOp::CompSwap:
      if (load_le(mem, a.width) != (a.compare & m)) return false;
      store_le(mem, a.width, a.operand[0] & m);
      return true;
  }
  return false;
}

}  // namespace mbpsim::mbcf
