// Deterministic random streams: one per component, derived from the run seed and the
// component's hierarchical name, so adding a component never changes another's stream.
#pragma once
#include <cmath>
#include <cstdint>
#include <string_view>

namespace mbpsim {

inline uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

inline uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// xoshiro256** (Blackman & Vigna): fast, 2^256 period, well tested; not for cryptography.
// The draws are always inlined: they sit on hot paths (a synthetic reference draws four or five),
// and whole-program optimisation otherwise decides by the size of unrelated code whether to
// inline them (a change to the socket stacks once made `below` a call: +19 instructions per
// reference on mbp64-private).
class Rng {
 public:
  Rng() : Rng(0, "") {}
  Rng(uint64_t seed, std::string_view stream_name) {
    uint64_t x = seed ^ fnv1a64(stream_name);
    for (auto& w : s_) w = splitmix64(x);
  }
  [[gnu::always_inline]] uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  [[gnu::always_inline]] double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n) without modulo bias (Lemire's method).
  [[gnu::always_inline]] uint64_t below(uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
    uint64_t l = static_cast<uint64_t>(m);
    if (l < n) {
      const uint64_t t = -n % n;
      while (l < t) {
        m = static_cast<unsigned __int128>(next()) * n;
        l = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
  // Trials up to and including the first success of a Bernoulli(p) process (>= 1).
  // Equivalent to testing p once per cycle, without one draw per idle cycle.
  // A gap too long for any run (p tiny or 0) is kNever, never a cast out of range.
  static constexpr uint64_t kNever = uint64_t{1} << 62;
  uint64_t geometric(double p) { return geometric(p, std::log1p(-p)); }
  // The same draw with log1p(-p) given (a caller that draws often with one p computes it once).
  uint64_t geometric(double p, double log1p_minus_p) {
    if (p >= 1.0) return 1;
    const double u = 1.0 - uniform();  // (0, 1]
    const double g = std::floor(std::log(u) / log1p_minus_p);
    if (!(g < static_cast<double>(kNever))) return kNever;  // also NaN (p = 0, u = 1)
    return 1 + static_cast<uint64_t>(g);
  }

 private:
  [[gnu::always_inline]] static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace mbpsim
