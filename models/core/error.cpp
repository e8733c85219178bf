#include "models/core/error.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include <systemc>

namespace mbpsim {
namespace {
unsigned long long g_seed = 0;
std::string g_config;
const char* g_phase = "starting";
}  // namespace

void set_phase(const char* phase) { g_phase = phase; }
const char* phase() { return g_phase; }

std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  auto escape = [&](unsigned char c) {
    char b[5];
    std::snprintf(b, sizeof b, "\\x%02x", c);
    out += b;
  };
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence (no overlong forms, no surrogates) is kept whole.
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool ok = n > 0 && i + n <= text.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    if (ok && n == 3) {
      const unsigned char d = static_cast<unsigned char>(text[i + 1]);
      ok = !(c == 0xe0 && d < 0xa0) && !(c == 0xed && d >= 0xa0);
    }
    if (ok && n == 4) {
      const unsigned char d = static_cast<unsigned char>(text[i + 1]);
      ok = !(c == 0xf0 && d < 0x90) && !(c == 0xf4 && d >= 0x90);
    }
    if (ok) {
      out.append(text, i, n);
      i += n;
    } else {
      escape(c);
      ++i;
    }
  }
  return out;
}

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
