// Big-endian (network order) fields of byte images: IP and UDP/TCP headers, sealed frames, the
// MBP2's send structures and key-exchange messages. Written once; the MBCF packet codec keeps
// its own appenders next to its layout (models/mbcf/packet.cpp).
#pragma once
#include <cstdint>
#include <vector>

namespace mbpsim {

inline uint32_t load_be16(const uint8_t* p) { return static_cast<uint32_t>(p[0]) << 8 | p[1]; }
inline uint32_t load_be32(const uint8_t* p) { return load_be16(p) << 16 | load_be16(p + 2); }
inline void store_be16(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void store_be32(uint8_t* p, uint32_t v) {
  store_be16(p, v >> 16);
  store_be16(p + 2, v);
}
inline void append_be32(std::vector<uint8_t>& out, uint32_t v) {
  out.resize(out.size() + 4);
  store_be32(out.data() + out.size() - 4, v);
}

}  // namespace mbpsim
