// Simulated time. Every model counts picoseconds in uint64_t. SystemC's time resolution is set
// to one picosecond, explicitly, first thing in every sc_main (`set_time_resolution`), so a
// SystemC time's value() is that count; `check_time_resolution` makes a run that finds another
// resolution stop before it simulates anything.
#pragma once
#include <cstdint>

#include <systemc>

namespace mbpsim {

// Sets SystemC's resolution to 1 ps. Must run before any non-zero sc_time exists.
inline void set_time_resolution() { sc_core::sc_set_time_resolution(1, sc_core::SC_PS); }
// True when the resolution is the 1 ps every model's arithmetic assumes.
inline bool time_resolution_is_ps() { return sc_core::sc_get_time_resolution() == sc_core::sc_time(1, sc_core::SC_PS); }
// The simulated present in picoseconds.
inline uint64_t sim_now_ps() { return static_cast<uint64_t>(sc_core::sc_time_stamp().value()); }

}  // namespace mbpsim
