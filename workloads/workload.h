// What drives a system. A workload schedules its own activity on the network's calendar
// (set_timer) and reports its headline results in the `summary` object of stats.json.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "models/core/config.h"
#include "models/net/network.h"

namespace mbpsim {

class Workload : public net::NetClient {
 public:
  // Phases in network cycles: warm-up (stats reset at its end), measurement window, and the
  // longest drain allowed for packets created in the window.
  struct Phases {
    uint64_t warmup = 0, measure = 0, drain = 0;
  };
  virtual Phases phases() const = 0;
  virtual void start() = 0;
  // Called at the end of the measurement window.
  virtual void end_of_window() {}
  // True when the run can end (everything it cares about delivered).
  virtual bool done() const = 0;
  virtual nlohmann::ordered_json summary() const = 0;
};

void declare_workload_params(ParamSchema& s);
std::unique_ptr<Workload> make_workload(const Config& c, net::Network& net, uint64_t seed);

}  // namespace mbpsim
