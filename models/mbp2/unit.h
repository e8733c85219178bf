// The base of every unit of the MBP2 NIC, and the time helpers they share.
#pragma once
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include <systemc>

#include "models/core/calendar.h"
#include "models/core/fair_share.h"
#include "models/core/params.h"
#include "models/core/sim_time.h"
#include "models/core/stats.h"

namespace mbpsim::mbp2 {

// Every unit is a SystemC module, a child of its NIC's module (system.host3.nic.pme): its name is the
// last part of its statistics name unless given. Units keep busy-until times and schedule what
// they do on the shared Calendar: event-driven, nothing ticks while idle.
class Unit : public sc_core::sc_module {
 protected:
  explicit Unit(const std::string& stat_name, const char* module = nullptr);
  // For a unit with ports or sockets of its own: its module name must stay on SystemC's
  // hierarchy while they are built, so it comes from the unit's constructor (which delegates,
  // see HostBus), not from a temporary made here.
  explicit Unit(const sc_core::sc_module_name& module) : sc_core::sc_module(module) {}
};

// Cycles of a clock as picoseconds.
inline uint64_t ps_of(double cycles, double mhz) { return static_cast<uint64_t>(std::llround(cycles * 1e6 / mhz)); }

}  // namespace mbpsim::mbp2
