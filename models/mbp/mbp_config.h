// Typed MBP configuration (MBP engine, C-TLB, N-TLB, directory, page placement and protocol
// attributes); its parameters are declared once, in mbp_params.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "models/core/config.h"
#include "models/core/params.h"
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
  // Every member is a parameter of `params()`, which gives it its default.
  MbpConfig();
  double clock_mhz{};
  uint32_t handler_cycles{};
  uint32_t ctlb_entries{}, ctlb_assoc{}, ctlb_miss_cycles{};
  uint32_t ntlb_entries{}, ntlb_assoc{}, ntlb_miss_cycles{};
  uint32_t header_flits{};
  uint32_t pointers{};
  uint32_t fullmap_unicast_max{};
  HomePolicy home_policy{};
  uint64_t block_pages{};
  std::vector<double> protocol_mix;  // invalidate, update, noncacheable
  std::vector<double> format_mix;    // hbitmap, pointers, fullmap
  std::vector<Region> regions;
  uint32_t write_buffer{};
  bool check_invariants{};
  uint64_t watchdog_ns{};

  uint64_t clock_ps() const { return static_cast<uint64_t>(1e6 / clock_mhz + 0.5); }
  static const ParamTable<MbpConfig>& params();
  static MbpConfig from(const Config& c);  // params() loaded, then cross-checked
};

void declare_mbp_params(ParamSchema& s);

}  // namespace mbpsim::mbp
