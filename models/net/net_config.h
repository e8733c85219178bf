// Typed network configuration; declared parameters live in net_params.cpp.
#pragma once
#include <cstdint>
#include <string>

#include "models/core/config.h"

namespace mbpsim::net {

struct NetConfig {
  int radix = 4;
  int levels = 2;
  double clock_mhz = 100.0;
  int routing_delay = 0;
  int va_delay = 1;
  int sa_delay = 1;
  int st_delay = 1;
  int link_latency = 1;
  int credit_delay = 2;
  int ni_delay = 1;
  int flit_bits = 64;
  int link_width_bits = 64;
  int vcs_per_class = 4;
  int buffer_depth = 8;
  bool combining = true;
  int combining_entries = 64;
  int ack_flits = 1;
  uint64_t watchdog_cycles = 100000;

  uint32_t nodes() const;
  int flit_cycles() const { return (flit_bits + link_width_bits - 1) / link_width_bits; }
  static NetConfig from(const Config& c);
};

void declare_net_params(ParamSchema& s);

}  // namespace mbpsim::net
