// libFuzzer harness: the MBP2's IPv4/UDP/TCP frame parser (models/mbp2/inet.cpp), with and
// without the L4 checksum check. It must never read past the frame, and a frame it accepts
// must have its payload inside the frame.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "models/mbp2/inet.h"

using namespace mbpsim::mbp2;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> frame(data, data + size);
  for (bool check : {true, false}) {
    Parsed p;
    if (parse_inet(frame, p, check) != InetError::None) continue;
    if (uint64_t(p.payload_off) + p.payload_len > frame.size()) {
      std::fprintf(stderr, "fuzz_inet: accepted payload runs past the frame\n");
      std::abort();
    }
  }
  return 0;
}
