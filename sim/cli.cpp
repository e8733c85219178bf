#include "sim/cli.h"

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "models/core/error.h"
#include "models/core/stats.h"
#include "sim/runner.h"

namespace po = boost::program_options;

namespace mbpsim {
namespace {

const char* kUsage =
    "usage: mbpsim run CONFIG.json [--set key=value]... [--out DIR] [--keep] [--seed N] [--quiet]\n"
    "       mbpsim validate CONFIG.json [--set key=value]...\n"
    "       mbpsim params [PREFIX]\n"
    "       mbpsim stats-doc CONFIG.json [--set key=value]... [--prefix PREFIX]\n"
    "       mbpsim trace info|validate|convert ...   (mbpsim trace for details)\n"
    "       mbpsim --help\n";

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
int cmd_stats_doc(const Stats& st, const std::string& prefix) {
  int shown = 0;
  for (const auto& s : st.describe()) {
    if (s.path.compare(0, prefix.size(), prefix) != 0) continue;
    std::printf("%-56s %-9s %-16s %s\n", s.path.c_str(), s.kind, s.unit.empty() ? "-" : s.unit.c_str(),
                s.desc.empty() ? "-" : s.desc.c_str());
    ++shown;
  }
  if (!shown) throw UserError("command line: no statistic starts with '" + prefix + "'");
  return 0;
}

}  // namespace

int cli_main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 1;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "params") return cmd_params(args);
  if (cmd == "trace") return cmd_trace(args);
  if (cmd != "run" && cmd != "validate" && cmd != "stats-doc")
    throw UserError("command line: unknown command '" + cmd + "'\n" + kUsage);

  RunOptions o;
  std::vector<std::string> positional;
  po::options_description desc("options");
  desc.add_options()("set", po::value<std::vector<std::string>>(&o.sets)->composing(),
                     "override a parameter: dotted.key=value")(
      "out", po::value<std::string>(&o.out_dir), "output folder (default: out)")(
      "keep", po::bool_switch(&o.keep), "refuse to replace an existing output folder")(
      "seed", po::value<uint64_t>(), "run seed")("quiet", po::bool_switch(&o.quiet),
                                                 "no heartbeat on stderr")(
      "config", po::value<std::vector<std::string>>(&positional), "config file")(
      "prefix", po::value<std::string>(), "stats-doc: only statistics whose path starts with this");
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
  if (vm.count("seed")) o.seed = vm["seed"].as<uint64_t>();

  if (vm.count("prefix") && cmd != "stats-doc") throw UserError("command line: --prefix is for stats-doc");
  if (cmd != "run")
    for (const auto& [opt, given] : {std::pair<const char*, bool>{"out", vm.count("out") > 0}, {"keep", o.keep}, {"quiet", o.quiet}})
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
    return cmd_stats_doc(st, vm.count("prefix") ? vm["prefix"].as<std::string>() : "");
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
