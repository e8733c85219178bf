// Error kinds with the exit status each one maps to (DESIGN.md section 5).
#pragma once
#include <stdexcept>
#include <string>

namespace mbpsim {

// Bad user input (config, CLI, trace): one line naming the file and the place; exit 1.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& msg) : std::runtime_error(msg) {}
};

// Internal bug: aborts with the seed and simulated time so the run can be replayed.
[[noreturn]] void internal_error(const std::string& what);
void set_crash_context(unsigned long long seed, const char* config_file);

}  // namespace mbpsim
