// libFuzzer harness: the MBCF/Ether packet decoder (models/mbcf/packet.cpp).
//  - decode() must never read past the end (AddressSanitizer checks every byte: the input is
//    copied into a buffer of exactly its size) and must classify every input;
//  - a packet it accepts must encode again, and that encoding must decode to a packet whose
//    encoding is the same bytes (encode and decode agree on every field).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "models/mbcf/packet.h"

using namespace mbpsim::mbcf;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<uint8_t[]> exact(new uint8_t[size ? size : 1]);
  std::copy(data, data + size, exact.get());
  Packet p;
  std::string why;
  if (decode(exact.get(), size, p, &why) != DecodeError::None) return 0;
  std::vector<uint8_t> once, twice;
  if (!encode(p, once)) {
    std::fprintf(stderr, "fuzz_mbcf_packet: a decoded packet does not encode\n");
    std::abort();
  }
  Packet q;
  const DecodeError e = decode(once.data(), once.size(), q, &why);
  if (e != DecodeError::None) {
    std::fprintf(stderr, "fuzz_mbcf_packet: re-encoded packet rejected: %s (%s)\n", to_string(e), why.c_str());
    std::abort();
  }
  if (!(q == p) || !encode(q, twice) || twice != once) {
    std::fprintf(stderr, "fuzz_mbcf_packet: decode(encode(p)) differs from p\n");
    std::abort();
  }
  return 0;
}
