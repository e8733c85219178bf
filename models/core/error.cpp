#include "models/core/error.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include <systemc>

namespace mbpsim {
namespace {
unsigned long long g_seed = 0;
std::string g_config;
}  // namespace

void set_crash_context(unsigned long long seed, const char* config_file) {
  g_seed = seed;
  g_config = config_file ? config_file : "";
}

void internal_error(const std::string& what) {
  std::fprintf(stderr, "mbpsim: internal error: %s (config %s, seed %llu, simulated time %s)\n",
               what.c_str(), g_config.c_str(), g_seed, sc_core::sc_time_stamp().to_string().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace mbpsim
