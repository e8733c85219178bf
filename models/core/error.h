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

// What the program is doing, for a message about a failure that names no place of its own
// (running out of memory): "building the system", "simulating", "writing the results".
void set_phase(const char* phase);
const char* phase();

// `text` for a terminal: control characters and bytes that are not UTF-8 as \xNN escapes (a
// message may quote bytes of a bad input file).
std::string printable(const std::string& text);

// Internal bug: aborts with the seed and simulated time so the run can be replayed.
[[noreturn]] void internal_error(const std::string& what);
void set_crash_context(unsigned long long seed, const char* config_file);

}  // namespace mbpsim
