// What drives a system. A workload schedules its own activity on the network's calendar
// (set_timer), or on its system's own calendar (the MBCF/Ether and MBP2 workloads, which run
// without a network), and reports its headline results in the `summary` object of stats.json.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/core/config.h"
#include "models/core/stats.h"
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
  // The parameter whose limit ended a run before done(): mbpsim names it and exits 3.
  virtual const char* limit_param() const { return "workload.max_cycles"; }
  // What was left undone when the limit came (for that message), or "".
  virtual std::string unfinished() const { return ""; }
  virtual nlohmann::ordered_json summary() const = 0;
  // Who receives the network's deliveries (a workload that drives a system hands it over).
  virtual net::NetClient* net_client() { return this; }
  // Non-empty when the system has gone quiet (nothing scheduled, nothing in flight) before the
  // workload finished: nothing can happen any more, so the run ends as a failure saying why.
  virtual std::string stalled() const { return ""; }
  // Non-empty when a checking workload (a tester) found the simulated system wrong: the run
  // still writes its stats (the evidence), then mbpsim exits 2 with this line and the seed.
  virtual std::string check_failed() const { return ""; }
  // Extra text for a simulated-system failure (exit 2): the oldest outstanding work.
  virtual std::string failure_dump() const { return ""; }
  // Non-empty when the workload's own input turned out bad during the run (a trace read on the
  // fly): the run stops and mbpsim exits 1 with this one line.
  virtual std::string input_error() const { return ""; }
  // Warnings about the experiment (not errors: the run is valid but may not mean what the user
  // thinks), printed on stderr after a run's results, one line each.
  virtual std::vector<std::string> warnings() const { return {}; }
  // Extra text for the heartbeat line (progress of the workload's own work).
  virtual std::string progress(double wall_s) const { return ""; }
  // How much of its own work the workload has done, 0 to 1 (references replayed, checks done,
  // points measured), for the heartbeat's percentage; negative when it cannot say.
  virtual double done_fraction() const { return -1; }
  // How often (network cycles) the runner asks done() after the window; simulated time is
  // advanced in slices this long, so a workload that keeps its own clock may ask for long ones.
  virtual uint64_t poll_cycles() const { return 200; }
  // Events the modelled system's own calendar processed (the network's are counted apart).
  virtual uint64_t calendar_events() const { return 0; }
  // Host-speed figures for host.json (never stats.json).
  virtual nlohmann::ordered_json host_figures(double wall_s) const { return nlohmann::ordered_json::object(); }
};

void declare_workload_params(ParamSchema& s);
std::unique_ptr<Workload> make_workload(const Config& c, net::Network& net, Stats& stats, uint64_t seed);
// Adds to `f` the host memory the system and workload of `c` will hold (models/core/footprint.h),
// from the config alone, before make_workload builds anything.
void forecast_memory(const Config& c, MemoryForecast& f);

}  // namespace mbpsim
