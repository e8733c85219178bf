#include "sim/runner.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nettle/sha2.h>
#include <systemc>

#include "models/core/sim_time.h"
#include "models/core/timeline.h"
#include "models/core/error.h"
#include "models/core/mutant.h"
#include "models/core/module_tree.h"
#include "models/mbp2/mbp2_cards.h"
#include "models/core/stats.h"
#include "sim/results.h"
#include "models/net/network.h"
#include "models/mbp/mbp_config.h"
#include "models/node/node_config.h"
#include "models/mbcf/ether_system.h"
#include "models/host/x11.h"
#include "models/sockets/inet_stack.h"
#include "workloads/trace/replay.h"
#include "workloads/mbcf_workloads.h"
#include "workloads/testers/mbcf_tester.h"
#include "workloads/testers/protection_tester.h"
#include "workloads/mbp_workload.h"
#include "workloads/testers/coherence_tester.h"
#include "workloads/testers/litmus_tester.h"
#include "workloads/summary_fields.h"
#include "workloads/workload.h"

namespace mbpsim {

using nlohmann::ordered_json;

const ParamSchema& schema() {
  static const ParamSchema s = [] {
    ParamSchema s;
    s.add({"experiment.description", ParamType::String, "", "", "free text: what this experiment is for"});
    s.add({"experiment.seed", ParamType::Int, 1, "", "run seed; every component derives its own stream from it (--seed overrides)", 0, 9.0e18});
    s.add({"experiment.max_memory_gb", ParamType::Double, 0.0, "GiB",
           "largest predicted host memory a run may take; a run predicted to need more is refused before it builds anything (0: 80% of this host's physical memory)", 0, 1e6});
    s.add({"experiment.heartbeat_s", ParamType::Double, 2.0, "s", "wall-clock period of the progress line on stderr (0: never)", 0, 1e6});
    net::declare_net_params(s);
    node::declare_node_params(s);
    mbp::declare_mbp_params(s);
    declare_workload_params(s);
    declare_mbp_workload_params(s);
    declare_tester_params(s);
    declare_litmus_params(s);
    declare_trace_params(s);
    mbcf::declare_mbcf_params(s);
    sockets::declare_socket_params(s);
    host::declare_x11_params(s);
    mbp2::declare_mbp2_params(s);
    declare_mbcf_workload_params(s);
    declare_protection_params(s);
    declare_mbcf_tester_params(s);
    return s;
  }();
  return s;
}

namespace {
const char* g_build_version = "unknown";
}
const char* build_version() { return g_build_version; }
void set_build_version(const char* v) { g_build_version = v; }

bool is_presentation_param(const std::string& key) {
  return key == "experiment.heartbeat_s" || key == "experiment.max_memory_gb";
}

std::string config_sha256(const ordered_json& resolved) {
  // Without the parameters that cannot change what is simulated (one list: is_presentation_param).
  ordered_json r = ordered_json::object();
  for (auto sec = resolved.begin(); sec != resolved.end(); ++sec) {
    if (!sec.value().is_object()) {
      r[sec.key()] = sec.value();
      continue;
    }
    ordered_json& out = r[sec.key()] = ordered_json::object();
    for (auto it = sec.value().begin(); it != sec.value().end(); ++it)
      if (!is_presentation_param(sec.key() + "." + it.key())) out[it.key()] = it.value();
  }
  const std::string text = r.dump();
  sha256_ctx h;
  sha256_init(&h);
  sha256_update(&h, text.size(), reinterpret_cast<const uint8_t*>(text.data()));
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_digest(&h, sizeof d, d);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

ordered_json resolved_for_run(const Config& c) {
  ordered_json rc = c.resolved();
  rc["experiment"]["seed"] = c.get_int("experiment.seed");
  return rc;
}

Config load_config(const std::string& path, const std::vector<std::string>& sets) {
  Config c = Config::load_file(schema(), path);
  for (const auto& s : sets) c.apply_set(s);
  return c;
}

namespace {

uint64_t peak_rss_bytes() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;
}

// A summary list of flat records (the `points` of rtt, oneway and peak) as a table, one row
// per record, at most 40 rows; false if `v` is not such a list.
bool print_table(const std::string& name, const ordered_json& v) {
  if (!v.is_array() || v.empty()) return false;
  std::vector<std::string> cols;
  for (const auto& r : v) {
    if (!r.is_object()) return false;
    for (auto it = r.begin(); it != r.end(); ++it) {
      if (it.value().is_structured()) return false;
      if (std::find(cols.begin(), cols.end(), it.key()) == cols.end()) cols.push_back(it.key());
    }
  }
  auto cell = [](const ordered_json& r, const std::string& k) {
    if (!r.contains(k)) return std::string();
    return r[k].is_string() ? r[k].get<std::string>() : r[k].dump();
  };
  const size_t shown = std::min<size_t>(v.size(), 40);
  // Each column as wide as its widest cell; text columns left-aligned, numbers right-aligned.
  std::vector<size_t> w(cols.size());
  std::vector<bool> text_col(cols.size(), false);
  for (size_t c = 0; c < cols.size(); ++c) {
    w[c] = cols[c].size();
    for (size_t i = 0; i < shown; ++i) {
      w[c] = std::max(w[c], cell(v[i], cols[c]).size());
      if (v[i].contains(cols[c]) && v[i][cols[c]].is_string()) text_col[c] = true;
    }
  }
  std::printf("  %s\n", name.c_str());
  auto row = [&](auto text) {
    std::string line = "   ";
    for (size_t c = 0; c < cols.size(); ++c) {
      const std::string t = text(c), pad(w[c] - t.size(), ' ');
      line += " " + (text_col[c] ? t + pad : pad + t);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::printf("%s\n", line.c_str());
  };
  row([&](size_t c) { return cols[c]; });
  for (size_t i = 0; i < shown; ++i) row([&](size_t c) { return cell(v[i], cols[c]); });
  if (shown < v.size()) std::printf("    (%zu more in stats.json)\n", v.size() - shown);
  return true;
}

// Six significant digits: the summary's precision (the statistics keep theirs). Through the
// decimal text, so that the value written is the shortest one that reads back the same.
void six_digits(ordered_json& v) {
  if (v.is_number_float()) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v.get<double>());
    v = std::strtod(b, nullptr);
  } else if (v.is_structured()) {
    for (auto& x : v) six_digits(x);
  }
}

// A summary value as the terminal shows it: six significant digits, null as "-", the unit after.
std::string summary_text(const ordered_json& v, const std::string& unit) {
  std::string t;
  if (v.is_null()) return "-";
  if (v.is_number_float()) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v.get<double>());
    t = b;
  } else if (v.is_string()) {
    t = v.get<std::string>();
  } else {
    t = v.dump();
  }
  for (const char* bare : {"", "bool", "text", "list", "object", "fraction", "ratio"})
    if (unit == bare) return t;
  return t + " " + unit;
}

}  // namespace

MemoryForecast forecast_run_memory(const Config& c) {
  MemoryForecast f;
  // This process as it stands (the program, its libraries, SystemC's kernel, the config), measured.
  f.add("program and libraries", resident_bytes_now(), "");
  forecast_memory(c, f);
  return f;
}

uint64_t memory_limit_bytes(const Config& c) {
  const double gb = c.get_double("experiment.max_memory_gb");
  if (gb > 0) return static_cast<uint64_t>(gb * 1024 * 1024 * 1024);
  return physical_memory_bytes() / 5 * 4;
}

void check_memory(const Config& c, const MemoryForecast& f) {
  const uint64_t limit = memory_limit_bytes(c);
  if (limit == 0 || f.total() <= limit) return;
  const std::string why = c.get_double("experiment.max_memory_gb") > 0 ? "experiment.max_memory_gb"
                                                                         : "experiment.max_memory_gb, by default 80% of this host's memory";
  throw UserError(c.origin() + ": predicted memory " + memory_text(f.total()) + " exceeds the limit of " + memory_text(limit) + " (" +
                  why + "): " + f.dominant(3));
}

void validate_config(const Config& c, Stats* registered) {
  // Builds what `run` builds, under the same statistics names, and starts nothing: the
  // MBCF/Ether and MBP2 systems alone, the others on a quad-tree network that never runs.
  net::NetConfig nc = net::NetConfig::from(c);
  Stats local;
  Stats& st = registered ? *registered : local;
  Root root;
  Within in(root);
  if (make_mbcf_workload(c.get_string("workload.kind"), c, st, 0)) return;
  net::Network n("net", nc, st);
  auto w = make_workload(c, n, st, 0);
}

namespace {

// SIGINT and SIGTERM: the first asks the run to stop at the next slice boundary (it then
// writes what it has, marked interrupted); a second exits at once.
volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_stop_signal(int sig) {
  if (g_signal) ::_exit(128 + sig);
  g_signal = sig;
}

// Installs the handlers for a run and puts the previous ones back after it. The two signals
// are unblocked too: a run started with them blocked (some job runners do) could otherwise not
// be stopped, and one already pending is taken at once.
class StopSignals {
 public:
  StopSignals() {
    g_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
    sigset_t both;
    sigemptyset(&both);
    sigaddset(&both, SIGINT);
    sigaddset(&both, SIGTERM);
    ::sigprocmask(SIG_UNBLOCK, &both, &old_mask_);
  }
  ~StopSignals() {
    ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {}, old_term_ {};
  sigset_t old_mask_{};
};

// Simulated time in the unit that reads best (the Ethernet systems run for seconds).
std::string simulated_time_text() {
  const double sim_s = sc_core::sc_time_stamp().to_seconds();
  char when[48];
  if (sim_s >= 1.0) std::snprintf(when, sizeof when, "%.3f s", sim_s);
  else if (sim_s >= 1e-3) std::snprintf(when, sizeof when, "%.3f ms", sim_s * 1e3);
  else std::snprintf(when, sizeof when, "%.3f us", sim_s * 1e6);
  return when;
}

}  // namespace

// CPU seconds (user and system) this process has used so far.
static double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

int run_experiment(const RunOptions& o) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const double cpu0 = cpu_seconds();
  Config cfg = load_config(o.config_path, o.sets);
  if (o.seed) cfg.set("experiment.seed", nlohmann::json(*o.seed), "--seed");
  const uint64_t seed = cfg.get_int("experiment.seed");
  set_crash_context(seed, o.config_path.c_str());
  if (!time_resolution_is_ps()) internal_error("SystemC's time resolution is not 1 ps (set_time_resolution was not called first)");

  // The results folder is claimed before anything is built: a refused --out costs nothing,
  // and bad input found while building leaves it as it was (sim/results.h).
  ResultsDir results(o.out_dir, o.keep);
  // From here a first SIGINT or SIGTERM is kept until the run's first step, where it stops the
  // run with what it has (a long build, a large trace's validation, is not cut in the middle);
  // a second one exits at once.
  StopSignals signals;
  // What the run will hold, from the config alone: a run the host cannot hold is refused here,
  // naming what makes it large, before it allocates (docs/PERFORMANCE.md, "Predicted memory").
  set_phase("predicting memory");
  const MemoryForecast forecast = forecast_run_memory(cfg);
  check_memory(cfg, forecast);
  set_phase("building the system");

  // The timeline, when asked for: set before the system is built (its modules take their
  // tracks then), written whatever way the run ends.
  std::unique_ptr<Timeline> tl;
  struct Unset {
    ~Unset() { set_timeline(nullptr); }
  } unset;
  if (!o.timeline.empty()) {
    {
      std::ofstream probe(o.timeline + ".partial");
      if (!probe) throw UserError(o.timeline + ": cannot write the timeline there");
    }
    std::filesystem::remove(o.timeline + ".partial");
    Timeline::Options to;
    to.from_ps = static_cast<uint64_t>(o.timeline_from_us * 1e6);
    if (o.timeline_to_us >= 0) to.to_ps = static_cast<uint64_t>(o.timeline_to_us * 1e6);
    to.prefixes = o.timeline_prefixes;
    to.max_events = o.timeline_max_events;
    tl = std::make_unique<Timeline>(to);
    set_timeline(tl.get());
  }
  auto write_timeline = [&] {
    if (!tl) return;
    tl->write(o.timeline);
    std::fprintf(stderr, "mbpsim: timeline %s: %llu events%s\n", o.timeline.c_str(), static_cast<unsigned long long>(tl->events()),
                 tl->left_out() ? (", " + std::to_string(tl->left_out()) + " left out (--timeline-max-events, or more than 64 at once on one module)").c_str() : "");
  };

  const net::NetConfig nc = net::NetConfig::from(cfg);
  Stats stats;
  // The MBCF/Ether and MBP2 systems have no quad-tree network and keep their own calendars, so
  // none is built for them: their stats.json holds only the system they model. The runner
  // still advances time in slices of the network clock (`network.clock_mhz`), the unit of
  // `workload.max_cycles` and of `run.simulated_cycles`.
  // Every part is a module under the root, `system` (docs/ARCHITECTURE.md, "Module tree").
  Root root;
  std::unique_ptr<net::Network> network;
  std::unique_ptr<Workload> wl;
  {
    Within in(root);
    wl = make_mbcf_workload(cfg.get_string("workload.kind"), cfg, stats, seed);
    if (!wl) {
      network = std::make_unique<net::Network>("net", nc, stats);
      wl = make_workload(cfg, *network, stats, seed);
      network->set_client(wl->net_client());
    }
  }
  const sc_core::sc_time per =
      network ? network->period() : sc_core::sc_time(1e6 / nc.clock_mhz, sc_core::SC_PS);
  auto net_failure = [&] { return network ? network->failure() : std::string(); };
  auto events = [&] {
    return (network ? network->events_processed() : 0) + wl->calendar_events();
  };

  set_phase("simulating");
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  if (network) network->start();
  wl->start();

  const Workload::Phases ph = wl->phases();
  const double hb = cfg.get_double("experiment.heartbeat_s");
  auto last_hb = t0;
  const uint64_t horizon = ph.warmup + ph.measure + ph.drain;
  auto heartbeat = [&] {
    const auto now = clock::now();
    if (o.quiet || hb <= 0 || std::chrono::duration<double>(now - last_hb).count() < hb) return;
    last_hb = now;
    const double wall = std::chrono::duration<double>(now - t0).count();
    const double simc = sc_core::sc_time_stamp() / per;
    // The workload's own progress where it can say (references replayed, checks done), else
    // how far simulated time is towards the run's limit, said as such.
    const double f = wl->done_fraction();
    char pct[64];
    if (f >= 0) std::snprintf(pct, sizeof pct, "%.0f%% of the workload done", 100.0 * f);
    else std::snprintf(pct, sizeof pct, "%.0f%% of the longest the run may take", 100.0 * simc / std::max<uint64_t>(horizon, 1));
    std::fprintf(stderr, "[mbpsim] %s simulated | wall %.1f s | %.0f events/s%s | %s\n", simulated_time_text().c_str(), wall,
                 events() / wall, wl->progress(wall).c_str(), pct);
  };
  // Simulates `cycles` more cycles (a whole number) in steps sized by the wall clock, so the
  // heartbeat and a signal are noticed about every quarter heartbeat period (half a second
  // when there is none), whatever a cycle costs: a 65,536-node network once took 100 s per
  // 10,000-cycle slice. Where one sc_start ends never changes what is simulated (the test
  // Robustness.TheWallClockNeverChangesTheResults runs with one-cycle steps).
  const double step_wall_s = hb > 0 ? std::min(hb / 4, 0.5) : 0.5;
  double cycles_per_wall_s = 0;  // measured on the steps so far
  auto advance = [&](double cycles) {
    while (cycles > 0 && !g_signal && net_failure().empty()) {
      double step = cycles;
      if (cycles_per_wall_s <= 0) step = std::min(step, 100.0);  // the first step measures the speed
      else step = std::min(step, std::max(1.0, std::floor(cycles_per_wall_s * step_wall_s)));
      const auto w0 = clock::now();
      // The slice's last cycle: the network may run its cycles up to it ahead of SystemC's
      // time (network.run_ahead), never past it. The cycle at the slice's very end is not in
      // it: sc_start makes what is due then runnable but runs it at the next sc_start.
      if (network) {
        const uint64_t end = (sc_core::sc_time_stamp() + per * step).value(), pv = per.value();
        network->set_horizon(mutant::on(mutant::Id::RunAheadIntoSliceEnd) ? end / pv : (end + pv - 1) / pv - 1);
      }
      sc_core::sc_start(per * step);
      const double dw = std::chrono::duration<double>(clock::now() - w0).count();
      if (dw > 0) cycles_per_wall_s = step / dw;
      cycles -= step;
      heartbeat();
    }
  };
  // Advances simulated time to `cycle` in fixed slices, asking `stop` at the end of each, so
  // that where a run ends never depends on wall time; stops early when `stop` says so, when the
  // simulated system failed, or when a signal asked.
  auto run_to = [&](uint64_t cycle, uint64_t slice, auto stop) {
    while ((network && network->now() < cycle) || sc_core::sc_time_stamp() < per * static_cast<double>(cycle)) {
      if (g_signal || !net_failure().empty() || stop()) return;
      const double cur = sc_core::sc_time_stamp() / per;
      const double step = std::min<double>(slice, static_cast<double>(cycle) - cur);
      if (step <= 0) break;
      advance(step);
    }
  };
  auto never = [] { return false; };
  run_to(ph.warmup, 10000, never);
  if (!g_signal) {
    stats.reset();
    if (network) {
      network->reset_epoch();
      network->set_measuring(true);
    }
    run_to(ph.warmup + ph.measure, 10000, never);
  }
  if (!g_signal) {
    if (network) network->set_measuring(false);
    wl->end_of_window();
    run_to(horizon, wl->poll_cycles(), [&] { return wl->done() || !wl->stalled().empty() || !wl->input_error().empty(); });
  }
  const int signal = g_signal;
  set_phase("writing the results");
  if (!wl->input_error().empty()) throw UserError(wl->input_error());  // the results folder stays as it was
  const double wall = std::chrono::duration<double>(clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;
  // Simulated time, whether or not the network had work in its last cycles.
  const uint64_t sim_cycles =
      static_cast<uint64_t>(std::llround(sc_core::sc_time_stamp() / per));

  const std::string stall = wl->stalled();
  std::string failure = net_failure();
  if (failure.empty() && !stall.empty()) {
    // (Said in simulated time: the MBCF systems have no network cycle counter.)
    char at[64];
    std::snprintf(at, sizeof at, " (at %.3f us simulated)", sc_core::sc_time_stamp().to_seconds() * 1e6);
    failure = stall + at;
  }
  // How the run ended, in the order that decides the exit status (README, "Exit status").
  const bool finished = wl->done();
  const char* limit = !signal && failure.empty() && !finished ? wl->limit_param() : nullptr;

  const ordered_json resolved = resolved_for_run(cfg);
  const std::string hash = config_sha256(resolved);
  auto provenance = [&](const std::vector<std::string>& command) {
    return ordered_json{{"mbpsim_version", build_version()}, {"command", command}, {"config_sha256", hash}};
  };
  const std::string bad = failure.empty() && !signal ? wl->check_failed() : std::string();

  // Every summary field is declared, with its unit and meaning (workloads/summary_fields.cpp).
  const std::string kind = cfg.get_string("workload.kind");
  ordered_json summary = wl->summary(), units = ordered_json::object();
  six_digits(summary);
  for (auto it = summary.begin(); it != summary.end(); ++it) {
    const SummaryField* f = find_summary_field(kind, it.key());
    if (!f) internal_error("summary field '" + it.key() + "' of workload " + kind + " is not declared in workloads/summary_fields.cpp");
    units[it.key()] = f->unit;
  }

  ordered_json st;
  st["summary"] = summary;
  st["summary_units"] = units;
  st["run"] = {{"seed", seed},
               {"simulated_cycles", sim_cycles},
               {"simulated_seconds", sc_core::sc_time_stamp().to_seconds()}};
  if (!failure.empty()) st["run"]["failure"] = failure;
  else if (signal) st["run"]["interrupted"] = true;
  else if (limit) st["run"]["stopped_by"] = limit;
  if (failure.empty() && !bad.empty()) st["run"]["check_failed"] = bad;
  st["provenance"] = provenance(o.result_argv);
  st["stats"] = stats.dump();
  results.write("stats.json", st.dump(2) + "\n");
  ordered_json rc = resolved;
  rc["provenance"] = provenance(o.argv);
  results.write("config.resolved.json", rc.dump(2) + "\n");

  if (!failure.empty()) {
    const std::string dump = (network ? network->dump_in_flight(20) : std::string()) + wl->failure_dump();
    ordered_json f;
    f["status"] = 2;
    f["failure"] = failure;
    f["seed"] = seed;
    f["config"] = o.config_path;
    f["simulated_seconds"] = sc_core::sc_time_stamp().to_seconds();
    f["in_flight"] = dump;
    results.write("failure.json", f.dump(2) + "\n");
    results.commit();
    write_timeline();
    std::fprintf(stderr, "mbpsim: simulated-system failure: %s\nseed %llu, config %s\n%s",
                 failure.c_str(), static_cast<unsigned long long>(seed), o.config_path.c_str(), dump.c_str());
    return 2;
  }

  ordered_json host;
  host["provenance"] = provenance(o.argv);
  host["wall_seconds"] = wall;
  // CPU time over the same span: what to compare between runs on a shared host (a busy
  // neighbour stretches wall time, not CPU time, as much).
  host["cpu_seconds"] = cpu;
  // Every calendar event of the run: the network's and the modelled system's own.
  host["events"] = events();
  host["events_per_second"] = static_cast<double>(events()) / wall;
  if (network) {
    host["network_events"] = network->events_processed();
    host["packets_delivered_total"] = network->total_delivered();
    host["packets_per_second"] = static_cast<double>(network->total_delivered()) / wall;
    host["router_steps"] = network->router_steps();
    host["router_lone_steps"] = network->router_lone_steps();
    host["router_express_hops"] = network->router_express_hops();
    host["network_run_ahead_cycles"] = network->run_ahead_cycles();
  }
  host["simulated_cycles_per_second"] = static_cast<double>(sim_cycles) / wall;
  host["peak_memory_bytes"] = peak_rss_bytes();
  host["predicted_memory_bytes"] = forecast.total();
  const ordered_json extra = wl->host_figures(wall);
  for (auto it = extra.begin(); it != extra.end(); ++it) host[it.key()] = it.value();
  results.write("host.json", host.dump(2) + "\n");
  results.commit();
  write_timeline();

  if (signal) {
    std::fprintf(stderr, "mbpsim: interrupted by %s at %s simulated (cycle %llu); the statistics so far are in %s/stats.json, marked interrupted\n",
                 signal == SIGINT ? "SIGINT" : "SIGTERM", simulated_time_text().c_str(),
                 static_cast<unsigned long long>(sim_cycles), o.out_dir.c_str());
    return 128 + signal;
  }

  // One time unit in the header: simulated time (the network's cycles are in stats.json's run).
  std::printf("mbpsim: %s: %s simulated in %.2f s of wall time (seed %llu)\n", o.config_path.c_str(), simulated_time_text().c_str(), wall,
              static_cast<unsigned long long>(seed));
  for (auto it = st["summary"].begin(); it != st["summary"].end(); ++it) {
    const std::string unit = units[it.key()].is_string() ? units[it.key()].get<std::string>() : "";
    const std::string v = it.value().is_structured() ? it.value().dump() : summary_text(it.value(), unit);
    if (v.size() <= 160) std::printf("  %-34s %s\n", it.key().c_str(), v.c_str());
    else if (!print_table(it.key(), it.value())) std::printf("  %-34s (in stats.json)\n", it.key().c_str());
  }
  std::printf("  results in %s/stats.json (what each field means: mbpsim stats-doc %s --prefix summary)\n", o.out_dir.c_str(),
              o.config_path.c_str());
  std::fflush(stdout);
  for (const std::string& w : wl->warnings()) std::fprintf(stderr, "mbpsim: warning: %s\n", w.c_str());
  if (!bad.empty()) {
    std::fprintf(stderr, "mbpsim: check failed: %s\nseed %llu, config %s\n", bad.c_str(),
                 static_cast<unsigned long long>(seed), o.config_path.c_str());
    return 2;
  }
  if (limit) {
    std::fflush(stdout);
    const std::string left = wl->unfinished();
    std::fprintf(stderr, "mbpsim: the run reached its limit, %s (simulated to cycle %llu), before the workload finished%s%s; "
                 "the results so far are in %s/stats.json\n",
                 limit, static_cast<unsigned long long>(sim_cycles), left.empty() ? "" : ": ", left.c_str(), o.out_dir.c_str());
    return 3;
  }
  return 0;
}

}  // namespace mbpsim
