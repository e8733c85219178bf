// libFuzzer harness: the MBP2's IPv4/UDP/TCP frame parser (models/mbp2/inet.cpp), with and
// without the L4 checksum check, and its fragment parser and reassembly. It must never read
// past the frame; a frame it accepts must have its payload inside the frame; a fragment it
// accepts must lie inside the frame and inside IP's 65,535 bytes, and a reassembly of it whose
// pieces cover the datagram must join into a frame that holds them all.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "models/mbp2/inet.h"

using namespace mbpsim::mbp2;

namespace {
[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_inet: %s\n", what);
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> frame(data, data + size);
  for (bool check : {true, false}) {
    Parsed p;
    if (parse_inet(frame, p, check) != InetError::None) continue;
    if (uint64_t(p.payload_off) + p.payload_len > frame.size()) fail("accepted payload runs past the frame");
  }
  Fragment f;
  if (!is_fragment(frame) || parse_fragment(frame, f) != InetError::None) return 0;
  if (uint64_t(f.data_off) + f.len > frame.size()) fail("accepted fragment runs past the frame");
  if (uint64_t(f.offset) + f.len > kIpMaxPacket - kIpHeader) fail("accepted fragment past IP's limit");
  // The fragment as the last piece of a datagram whose earlier pieces are zero bytes: when
  // it completes, the join must hold the whole IP payload.
  Reassembly r;
  std::vector<std::vector<uint8_t>> frames;
  if (f.offset > 0) {
    std::vector<uint8_t> head = frame;
    head.resize(f.data_off + f.offset);
    std::fill(head.begin() + f.data_off, head.end(), 0);
    head[16] = static_cast<uint8_t>((20 + f.offset) >> 8);
    head[17] = static_cast<uint8_t>(20 + f.offset);
    if (r.add(0, f.offset, true, 0) != Reassembly::Add::Held) fail("a first piece was not held");
    frames.push_back(std::move(head));
  }
  if (r.add(f.offset, f.len, false, 1) != Reassembly::Add::Complete) return 0;  // (one with MF set)
  frames.push_back(frame);
  const std::vector<uint8_t> whole = join_fragments(frames);
  if (whole.size() != f.data_off + f.offset + f.len) fail("the join lost bytes");
  return 0;
}
