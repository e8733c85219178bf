// Typed network configuration; its parameters are declared once, in net_params.cpp.
#pragma once
#include <cstdint>
#include <string>

#include "models/core/config.h"
#include "models/core/params.h"

namespace mbpsim::net {

struct NetConfig {
  // Every member is a parameter of `params()`, which gives it its default.
  NetConfig();
  int radix{};
  int levels{};
  double clock_mhz{};
  int routing_delay{};
  int va_delay{};
  int sa_delay{};
  int st_delay{};
  int link_latency{};
  int credit_delay{};
  int ni_delay{};
  int flit_bits{};
  int link_width_bits{};
  int vcs_per_class{};
  int buffer_depth{};
  bool combining{};
  int combining_entries{};
  int ack_flits{};
  uint64_t watchdog_cycles{};
  bool fast_path{};
  bool run_ahead{};
  bool express_hops{};

  uint32_t nodes() const;
  int flit_cycles() const { return (flit_bits + link_width_bits - 1) / link_width_bits; }
  static const ParamTable<NetConfig>& params();
  static NetConfig from(const Config& c);  // params() loaded, then cross-checked
};

void declare_net_params(ParamSchema& s);

}  // namespace mbpsim::net
