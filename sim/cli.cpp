#include "sim/cli.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <algorithm>
#include <sstream>

#include <boost/program_options.hpp>
#include <systemc>

#include "models/core/error.h"
#include "models/core/stats.h"
#include "sim/runner.h"
#include "workloads/summary_fields.h"

namespace po = boost::program_options;

namespace mbpsim {
namespace {

const char* kUsage =
    "usage: mbpsim run CONFIG.json [--set key=value]... [--out DIR] [--keep] [--seed N] [--quiet]\n"
    "       mbpsim sweep CONFIG.json [--grid key=VALUES]... [--zip key=VALUES]... [--seed N,...] [--jobs N] [--out DIR]\n"
    "       mbpsim plot SWEEP_DIR --x KEY --y FIELD [--series KEY] [--log-x] [--log-y] [--out FILE.png|.svg]\n"
    "       mbpsim validate CONFIG.json [--set key=value]...\n"
    "       mbpsim params [PREFIX]\n"
    "       mbpsim stats-doc CONFIG.json [--set key=value]... [--prefix PREFIX]\n"
    "       mbpsim trace info|validate|convert ...\n"
    "       mbpsim --version\n"
    "       mbpsim COMMAND --help   (what a command does and its options)\n";

// What each command does, for `mbpsim COMMAND --help` (the options follow, from Boost).
const char* command_help(const std::string& cmd) {
  if (cmd == "run")
    return "usage: mbpsim run CONFIG.json [options]\n"
           "Runs one experiment and writes stats.json, config.resolved.json and host.json into the --out\n"
           "folder (replaced whole, never mixed). Exit status: 0 finished, 1 bad input, 2 a simulated\n"
           "failure or a failed check, 3 stopped by a limit, 130/143 interrupted (README, \"Exit status\").\n";
  if (cmd == "validate")
    return "usage: mbpsim validate CONFIG.json [--set key=value]... [--seed N]\n"
           "Checks a config as run would (types, ranges, the memory forecast) and builds the system\n"
           "without simulating; prints the predicted memory item by item. Exit status 0 or 1.\n";
  if (cmd == "stats-doc")
    return "usage: mbpsim stats-doc CONFIG.json [--set key=value]... [--prefix PREFIX]\n"
           "Lists the summary fields and the statistics a config's system writes to stats.json:\n"
           "path, kind, unit and description. A counter is a whole number; an average holds mean, count,\n"
           "min and max, a histogram count, mean, min, p50, p90, p99 and max; a formula is a number.\n"
           "What was not measured is null, never 0 (an average or histogram with count 0, a ratio\n"
           "over nothing).\n";
  if (cmd == "params")
    return "usage: mbpsim params [PREFIX]\n"
           "Lists every parameter (or those starting with PREFIX): key, default, unit, description, choices.\n";
  return nullptr;
}

int cmd_params(const std::vector<std::string>& args) {
  if (args.size() > 1) throw UserError("command line: params takes at most one PREFIX");
  const std::string prefix = args.empty() ? "" : args[0];
  int shown = 0;
  for (const auto& s : schema().all()) {
    if (s.key.compare(0, prefix.size(), prefix) != 0) continue;
    std::string def = s.def.dump();
    std::printf("%-30s %-12s %-16s %s", s.key.c_str(), def.c_str(),
                s.unit.empty() ? "-" : s.unit.c_str(), s.desc.c_str());
    if (!s.choices.empty()) {
      std::printf(" {");
      for (size_t i = 0; i < s.choices.size(); ++i) std::printf("%s%s", i ? "|" : "", s.choices[i].c_str());
      std::printf("}");
    }
    std::printf("\n");
    ++shown;
  }
  if (!shown) throw UserError("command line: no parameter starts with '" + prefix + "'");
  return 0;
}

// The statistics a config's system registers when it is built, with their descriptions: what
// `mbpsim run` writes to stats.json (a few that a component registers on first use, such as
// the PME's per-handler times, appear in stats.json only).
int cmd_stats_doc(const Stats& st, const std::string& prefix, const std::string& kind) {
  int shown = 0;
  // The summary's fields first (stats.json "summary"; some appear only in some configurations,
  // as their descriptions say), then the statistics.
  for (const auto& f : summary_fields()) {
    const std::string path = "summary." + f.name;
    if (std::find(f.kinds.begin(), f.kinds.end(), kind) == f.kinds.end() || path.compare(0, prefix.size(), prefix) != 0) continue;
    std::printf("%-56s %-9s %-16s %s\n", path.c_str(), "summary", f.unit.empty() ? "-" : f.unit.c_str(), f.desc.c_str());
    ++shown;
  }
  for (const auto& s : st.describe()) {
    if (s.path.compare(0, prefix.size(), prefix) != 0) continue;
    std::printf("%-56s %-9s %-16s %s\n", s.path.c_str(), s.kind, s.unit.empty() ? "-" : s.unit.c_str(),
                s.desc.empty() ? "-" : s.desc.c_str());
    ++shown;
  }
  if (!shown) throw UserError("command line: no statistic starts with '" + prefix + "'");
  return 0;
}

// `text` as a whole number: digits only (std::stoull alone also takes a sign and leading
// spaces, and ' -3' as 2^64 - 3); nullopt for anything else or beyond 2^64 - 1.
std::optional<uint64_t> whole_number(const std::string& text) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }))
    return std::nullopt;
  try {
    return std::stoull(text);
  } catch (const std::out_of_range&) {
    return std::nullopt;
  }
}

}  // namespace

std::vector<uint64_t> parse_seeds(const std::string& text) {
  std::vector<uint64_t> out;
  std::string t = text;
  if (!t.empty() && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
  std::stringstream ss(t);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const std::optional<uint64_t> v = whole_number(item);
    if (!v) throw UserError("command line: --seed " + text + ": '" + item + "' is not a seed (a whole number >= 0)");
    out.push_back(*v);
  }
  if (out.empty()) throw UserError("command line: --seed needs at least one seed");
  return out;
}

uint64_t parse_whole(const std::string& option, const std::string& text, uint64_t lo, uint64_t hi) {
  const std::optional<uint64_t> v = whole_number(text);
  if (!v || *v < lo || *v > hi)
    throw UserError("command line: " + option + " " + text + ": expected a whole number " +
                    (hi == UINT64_MAX ? ">= " + std::to_string(lo) : "from " + std::to_string(lo) + " to " + std::to_string(hi)));
  return *v;
}

int cli_main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 1;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    if (!args.empty()) {
      args.assign({args[0], "--help"});
      return cli_main_args(args);
    }
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "--version") {
    std::printf("mbpsim %s (SystemC %s)\n", build_version(), sc_core::sc_version_string.c_str());
    return 0;
  }
  std::vector<std::string> all{cmd};
  all.insert(all.end(), args.begin(), args.end());
  return cli_main_args(all, std::vector<std::string>(argv, argv + argc));
}

int cli_main_args(std::vector<std::string> args, const std::vector<std::string>& argv) {
  const std::string cmd = args[0];
  args.erase(args.begin());
  const bool help = std::find(args.begin(), args.end(), "--help") != args.end() ||
                    std::find(args.begin(), args.end(), "-h") != args.end();
  if (cmd == "params") {
    if (help) return std::fputs(command_help(cmd), stdout), 0;
    return cmd_params(args);
  }
  if (cmd == "trace") return cmd_trace(args);
  if (cmd == "sweep") return cmd_sweep(args);
  if (cmd == "plot") return cmd_plot(args);
  if (cmd != "run" && cmd != "validate" && cmd != "stats-doc")
    throw UserError("command line: unknown command '" + cmd + "'\n" + kUsage);

  RunOptions o;
  std::vector<std::string> positional;
  po::options_description common("options"), run_opts("run"), doc_opts("stats-doc"), desc;
  common.add_options()("set", po::value<std::vector<std::string>>(&o.sets)->composing(),
                       "override a parameter: dotted.key=value (repeatable)")(
      "seed", po::value<std::string>(), "run seed (overrides experiment.seed)")(
      "config", po::value<std::vector<std::string>>(&positional), "the config file (also given without --config)")(
      "help,h", "this text");
  run_opts.add_options()("out", po::value<std::string>(&o.out_dir), "output folder (default: out)")(
      "keep", po::bool_switch(&o.keep), "refuse to replace an existing output folder")(
      "quiet", po::bool_switch(&o.quiet), "no heartbeat on stderr")(
      "timeline", po::value<std::string>(&o.timeline), "write the transaction timeline (Chrome trace-event JSON: Perfetto, chrome://tracing) to this file")(
      "timeline-window", po::value<std::string>(), "only what happens in FROM:TO microseconds of simulated time (either may be empty)")(
      "timeline-prefix", po::value<std::vector<std::string>>(&o.timeline_prefixes)->composing(), "only modules whose name starts with this (repeatable), e.g. system.net.router_1")(
      "timeline-max-events", po::value<std::string>(), "stop recording after this many events (default 1000000)");
  doc_opts.add_options()("prefix", po::value<std::string>(), "only the fields and statistics whose path starts with this");
  desc.add(common).add(run_opts).add(doc_opts);
  if (help) {
    std::fputs(command_help(cmd), stdout);
    std::ostringstream os;
    po::options_description shown;
    shown.add(common);
    if (cmd == "run") shown.add(run_opts);
    if (cmd == "stats-doc") shown.add(doc_opts);
    os << shown;
    std::string text = os.str();
    if (!text.empty() && text.back() != '\n') text += '\n';
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  po::positional_options_description pos;
  pos.add("config", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UserError(std::string("command line: ") + e.what());
  }
  if (positional.size() != 1)
    throw UserError("command line: " + cmd + " takes exactly one CONFIG.json");
  o.config_path = positional[0];
  if (vm.count("seed")) {
    const std::string text = vm["seed"].as<std::string>();
    const std::vector<uint64_t> seeds = parse_seeds(text);
    if (seeds.size() != 1) throw UserError("command line: --seed " + text + ": " + cmd + " takes one seed (a sweep takes a list)");
    o.seed = seeds[0];
  }
  o.argv = argv;
  // What decides the results: the command, the config, --set and --seed (stats.json).
  o.result_argv = {"mbpsim", cmd, o.config_path};
  for (const auto& set : o.sets)
    if (!is_presentation_param(set.substr(0, set.find('=')))) o.result_argv.insert(o.result_argv.end(), {"--set", set});
  if (o.seed) o.result_argv.insert(o.result_argv.end(), {"--seed", std::to_string(*o.seed)});

  if (vm.count("prefix") && cmd != "stats-doc") throw UserError("command line: --prefix is for stats-doc");
  const bool timeline_opt = vm.count("timeline-window") || !o.timeline_prefixes.empty() || vm.count("timeline-max-events");
  if (timeline_opt && o.timeline.empty()) throw UserError("command line: --timeline-window, --timeline-prefix and --timeline-max-events go with --timeline FILE");
  if (vm.count("timeline-window")) {
    const std::string w = vm["timeline-window"].as<std::string>();
    const auto colon = w.find(':');
    auto num = [&](const std::string& t, double dflt) {
      if (t.empty()) return dflt;
      char* end = nullptr;
      const double v = std::strtod(t.c_str(), &end);
      if (*end || !(v >= 0) || v > 1e15) throw UserError("command line: --timeline-window " + w + ": '" + t + "' is not a time in microseconds >= 0");
      return v;
    };
    if (colon == std::string::npos) throw UserError("command line: --timeline-window " + w + ": expected FROM:TO in microseconds (10:20, :5, 100:)");
    o.timeline_from_us = num(w.substr(0, colon), 0);
    o.timeline_to_us = num(w.substr(colon + 1), -1);
    if (o.timeline_to_us >= 0 && o.timeline_to_us < o.timeline_from_us) throw UserError("command line: --timeline-window " + w + ": TO is before FROM");
  }
  if (vm.count("timeline-max-events"))
    o.timeline_max_events = parse_whole("--timeline-max-events", vm["timeline-max-events"].as<std::string>(), 1, UINT64_MAX);
  if (cmd != "run")
    for (const auto& [opt, given] : {std::pair<const char*, bool>{"out", vm.count("out") > 0}, {"keep", o.keep}, {"quiet", o.quiet}, {"timeline", !o.timeline.empty()}})
      if (given) throw UserError(std::string("command line: --") + opt + " is for run (" + cmd + " writes no results)");
  // validate and stats-doc check the seed as run would take it.
  auto config = [&] {
    Config c = load_config(o.config_path, o.sets);
    if (o.seed) c.set("experiment.seed", nlohmann::json(*o.seed), "--seed");
    return c;
  };
  if (cmd == "stats-doc") {
    Config c = config();
    check_memory(c, forecast_run_memory(c));
    Stats st;
    validate_config(c, &st);
    return cmd_stats_doc(st, vm.count("prefix") ? vm["prefix"].as<std::string>() : "", c.get_string("workload.kind"));
  }
  if (cmd == "validate") {
    // The memory first: a config too large for this host is refused before anything is built.
    const Config c = config();
    const MemoryForecast f = forecast_run_memory(c);
    check_memory(c, f);
    validate_config(c);
    std::printf("%s: ok\n", o.config_path.c_str());
    std::printf("  predicted memory %s (limit %s)", memory_text(f.total()).c_str(), memory_text(memory_limit_bytes(c)).c_str());
    if (f.worst_total() > f.total()) std::printf(", %s if every cache line were used", memory_text(f.worst_total()).c_str());
    std::printf("\n");
    for (const auto& i : f.items())
      std::printf("    %-20s %12s%s%s\n", i.what.c_str(), memory_text(i.bytes).c_str(), i.params.empty() ? "" : "   ",
                  i.params.c_str());
    return 0;
  }
  return run_experiment(o);
}

}  // namespace mbpsim
