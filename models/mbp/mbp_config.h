// Typed MBP configuration (MBP engine, C-TLB, N-TLB, directory, page placement and protocol
// attributes); declared parameters live in mbp_params.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "models/core/config.h"
#include "models/mbp/directory.h"
#include "models/node/memop.h"

namespace mbpsim::mbp {

enum class HomePolicy : uint8_t { Interleave, FirstTouch, Block };

// Pages of [base, base + bytes) get this protocol and directory format (first match wins);
// other pages draw theirs from protocol_mix and format_mix.
struct Region {
  uint64_t base = 0, bytes = 0;
  int protocol = -1;  // node::Protocol, or -1: draw from the mix
  int format = -1;    // DirFormat, or -1: draw from the mix
};

struct MbpConfig {
  double clock_mhz = 100.0;
  uint32_t handler_cycles = 8;
  uint32_t ctlb_entries = 256, ctlb_assoc = 4, ctlb_miss_cycles = 12;
  uint32_t ntlb_entries = 256, ntlb_assoc = 4, ntlb_miss_cycles = 12;
  uint32_t header_flits = 2;
  uint32_t pointers = 4;
  uint32_t fullmap_unicast_max = 4;
  HomePolicy home_policy = HomePolicy::Interleave;
  uint64_t block_pages = 16;
  std::vector<double> protocol_mix{1.0, 0.0, 0.0};   // invalidate, update, noncacheable
  std::vector<double> format_mix{1.0, 0.0, 0.0};     // hbitmap, pointers, fullmap
  std::vector<Region> regions;
  uint32_t write_buffer = 8;
  bool check_invariants = false;
  uint64_t watchdog_ns = 2000000;

  uint64_t clock_ps() const { return static_cast<uint64_t>(1e6 / clock_mhz + 0.5); }
  static MbpConfig from(const Config& c);
};

void declare_mbp_params(ParamSchema& s);

}  // namespace mbpsim::mbp
