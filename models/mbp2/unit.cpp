#include "models/mbp2/unit.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"

namespace mbpsim::mbp2 {

Unit::Unit(const std::string& stat_name, const char* module)
    : sc_core::sc_module(sc_core::sc_module_name(module ? module : stat_name.substr(stat_name.rfind('.') + 1).c_str())) {}

}  // namespace mbpsim::mbp2
