// `mbpsim sweep` (sim/sweep.h; sim/README.md, "Sweeps").
#include "sim/sweep.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "models/core/error.h"
#include "sim/cli.h"
#include "sim/runner.h"

extern char** environ;

namespace mbpsim {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

SweepRanksFactory g_factory = nullptr;

const char* kSweepHelp =
    "usage: mbpsim sweep CONFIG.json [options]\n"
    "Runs CONFIG once per point of the cross product of the axes, each point as its own\n"
    "`mbpsim run` process, --jobs at a time, and writes one folder per point (DIR/points/pNNNN),\n"
    "each point's output (DIR/logs/pNNNN.out and .err), and DIR/sweep.csv and DIR/sweep.json: one\n"
    "row per point with the swept values, the seed, the exit status, its message, every scalar\n"
    "of the point's summary, and a column COMMAND@SIZE (TCP@1024) for each of its measured points\n"
    "(rtt, oneway, peak). Axes vary in the order given, the first slowest; the --zip lists\n"
    "together form one axis, where the first --zip stands; seeds vary fastest.\n"
    "A point whose folder already holds the results of the same config and seed is not run again\n"
    "(so an interrupted sweep resumes where it stopped); a failed point is recorded and the\n"
    "others go on. Under mpirun each rank runs every size-th point and rank 0 writes the tables;\n"
    "--shard I/N runs every N-th point from the I-th (0-based) and writes DIR/sweep.shard-I-of-N.*,\n"
    "for a job array; a last run without --shard then finds every point done and writes the tables.\n"
    "Exit status: 0 every point finished, 3 every point ran but one or more stopped at a limit\n"
    "(their rows hold the results so far), 2 one or more points failed, 1 bad input (nothing run),\n"
    "130/143 interrupted (the tables hold the points done).\n"
    "\n"
    "options:\n"
    "  --set key=value       override a parameter in every point\n"
    "  --grid key=VALUES     an axis: VALUES is a JSON list ([0.01,0.02], [true,false], [\"a\",\"b\"])\n"
    "                        or a numeric range FIRST:STEP:LAST (0.01:0.01:0.05)\n"
    "  --zip key=VALUES      lists of one length that vary together (one axis)\n"
    "  --seed N[,N...]       run every point with each of these seeds (repeatable)\n"
    "  --jobs N              points run at once (default: the cores, divided among the MPI ranks\n"
    "                        of one host)\n"
    "  --out DIR             the sweep's folder (default: sweep)\n"
    "  --shard I/N           run only the I-th of N shares of the points (0 <= I < N)\n"
    "  --quiet               no progress lines on stderr\n"
    "  -h, --help            this text\n";

struct Axis {
  enum Kind { Grid, Zip, Seed } kind;
  std::vector<std::string> keys;           // Zip: several keys
  std::vector<std::vector<json>> values;   // values[i] for keys[i]
  size_t size() const { return values.empty() ? 0 : values[0].size(); }
};

struct Point {
  size_t index = 0;
  std::string name;                                 // p0000
  std::vector<std::pair<std::string, json>> sets;   // the axes' values, in axis order
  std::optional<uint64_t> seed;                     // a --seed axis
  uint64_t resolved_seed = 0;
  std::string hash;
};

std::string trim_number(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.12g", v);
  return b;
}

// VALUES: a JSON list, or FIRST:STEP:LAST.
std::vector<json> parse_values(const std::string& opt, const std::string& key, const std::string& text) {
  const std::string where = "command line: " + opt + " " + key + "=" + text;
  if (!text.empty() && text[0] == '[') {
    json v;
    try {
      v = json::parse(text);
    } catch (const json::exception&) {
      throw UserError(where + ": not a JSON list (strings need their quotes: [\"a\",\"b\"])");
    }
    if (!v.is_array() || v.empty()) throw UserError(where + ": expected a non-empty JSON list");
    return std::vector<json>(v.begin(), v.end());
  }
  const auto c1 = text.find(':'), c2 = c1 == std::string::npos ? c1 : text.find(':', c1 + 1);
  if (c2 == std::string::npos)
    throw UserError(where + ": expected a JSON list such as [0.01,0.02] or a range FIRST:STEP:LAST");
  auto num = [&](const std::string& t) {
    try {
      size_t used = 0;
      const double d = std::stod(t, &used);
      if (used != t.size() || !std::isfinite(d)) throw std::invalid_argument(t);
      return d;
    } catch (const std::exception&) {
      throw UserError(where + ": '" + t + "' is not a number");
    }
  };
  const std::string a = text.substr(0, c1), s = text.substr(c1 + 1, c2 - c1 - 1), b = text.substr(c2 + 1);
  const double first = num(a), step = num(s), last = num(b);
  if (step <= 0 || last < first) throw UserError(where + ": a range needs STEP > 0 and LAST >= FIRST");
  const bool ints = a.find_first_of(".eE") == std::string::npos && s.find_first_of(".eE") == std::string::npos &&
                    b.find_first_of(".eE") == std::string::npos;
  const double n = std::floor((last - first) / step * (1 + 1e-12)) + 1;
  if (n > 100000) throw UserError(where + ": more than 100000 values");
  std::vector<json> out;
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
    const double v = first + static_cast<double>(i) * step;
    if (ints) out.emplace_back(static_cast<int64_t>(std::llround(v)));
    else out.emplace_back(std::stod(trim_number(v)));  // 0.1+0.2 written as 0.3
  }
  return out;
}

std::string csv_cell(const json& v) {
  if (v.is_null()) return "";
  std::string t = v.is_string() ? v.get<std::string>() : v.dump();
  if (t.find_first_of(",\"\n\r") == std::string::npos) return t;
  std::string q = "\"";
  for (char c : t) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

// The summary's scalars, objects flattened with dots; lists stay in the point's stats.json.
void flatten(const ordered_json& v, const std::string& prefix, ordered_json& row) {
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string k = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it.value().is_object()) flatten(it.value(), k, row);
    else if (!it.value().is_array()) row[k] = it.value();
  }
}

// A list of measured points (summary.points of the rtt, oneway and peak workloads: each a
// command, a size, a value and its unit) gives one column per point, `COMMAND@SIZE` (TCP@1024,
// MBCF_WRITE_STAT@4), holding its value in its unit; a point without those fields gives none.
void flatten_points(const ordered_json& summary, ordered_json* row, ordered_json* units) {
  const auto it = summary.find("points");
  if (it == summary.end() || !it->is_array()) return;
  for (const ordered_json& p : *it) {
    if (!p.is_object() || !p.contains("value")) continue;
    const auto c = p.find("command"), z = p.find("size");
    if (c == p.end() || !c->is_string() || z == p.end() || !z->is_number_unsigned()) continue;
    const std::string k = c->get<std::string>() + "@" + std::to_string(z->get<uint64_t>());
    if (row) (*row)[k] = p["value"];
    if (units && p.contains("unit") && p["unit"].is_string()) (*units)[k] = p["unit"];
  }
}

void write_atomic(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    f.flush();
    if (!f) throw UserError(p.string() + ": cannot write");
  }
  fs::rename(tmp, p);
}

volatile std::sig_atomic_t g_sweep_signal = 0;
extern "C" void on_sweep_signal(int sig) { g_sweep_signal = sig; }

// What a finished point's folder says, if it holds the results of `p` (same config and seed).
struct Outcome {
  bool complete = false;
  int status = 0;
  std::string message;
  ordered_json summary, units;
};

Outcome read_point(const fs::path& dir, const Point& p) {
  Outcome o;
  std::ifstream f(dir / "stats.json");
  if (!f) return o;
  ordered_json st;
  try {
    st = ordered_json::parse(f);
  } catch (const std::exception&) {
    return o;
  }
  if (!st.contains("provenance") || st["provenance"].value("config_sha256", "") != p.hash) return o;
  const ordered_json& run = st["run"];
  if (run.contains("interrupted")) return o;
  o.complete = true;
  if (run.contains("failure")) o.status = 2, o.message = run["failure"].get<std::string>();
  else if (run.contains("check_failed")) o.status = 2, o.message = "check failed: " + run["check_failed"].get<std::string>();
  else if (run.contains("stopped_by")) o.status = 3, o.message = "stopped by " + run["stopped_by"].get<std::string>();
  o.summary = st.value("summary", ordered_json::object());
  o.units = st.value("summary_units", ordered_json::object());
  flatten_points(o.summary, nullptr, &o.units);
  return o;
}

// The first line a failed run wrote to stderr that says why ("mbpsim: ..."), without the prefix.
std::string first_error_line(const fs::path& err) {
  std::ifstream f(err);
  std::string line, first;
  while (std::getline(f, line)) {
    if (line.rfind("mbpsim: warning:", 0) == 0) continue;
    if (line.rfind("mbpsim: ", 0) == 0) return line.substr(8);
    if (first.empty() && !line.empty()) first = line;
  }
  return first;
}

std::string self_exe() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) internal_error("cannot find this program (/proc/self/exe): " + ec.message());
  return p.string();
}

}  // namespace

bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_SIZE");
}
void set_sweep_ranks_factory(SweepRanksFactory f) { g_factory = f; }

int cmd_sweep(const std::vector<std::string>& args) {
  std::string config_path, out_dir = "sweep";
  std::vector<std::string> sets;
  std::vector<Axis> axes;
  std::vector<uint64_t> seeds;
  int jobs = 0, shard_i = 0, shard_n = 1;
  bool quiet = false, sharded = false;
  std::set<std::string> keys_seen;
  int zip_axis = -1;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i], val;
    if (a == "-h" || a == "--help") {
      std::fputs(kSweepHelp, stdout);
      return 0;
    }
    const bool is_opt = a.rfind("--", 0) == 0;
    if (is_opt && a != "--quiet") {
      const auto eq = a.find('=');
      if (eq != std::string::npos) {
        val = a.substr(eq + 1);
        a = a.substr(0, eq);
      } else {
        if (i + 1 == args.size()) throw UserError("command line: " + a + " needs a value (mbpsim sweep --help)");
        val = args[++i];
      }
    }
    if (!is_opt) {
      if (!config_path.empty()) throw UserError("command line: sweep takes exactly one CONFIG.json ('" + a + "' is a second)");
      config_path = a;
    } else if (a == "--quiet") {
      quiet = true;
    } else if (a == "--set") {
      sets.push_back(val);
    } else if (a == "--grid" || a == "--zip") {
      const auto eq = val.find('=');
      if (eq == std::string::npos || eq == 0) throw UserError("command line: " + a + " " + val + ": expected key=VALUES");
      const std::string key = val.substr(0, eq);
      if (!schema().find(key)) throw UserError("command line: " + a + " " + val + ": no parameter '" + key + "' (mbpsim params lists them)");
      if (key == "experiment.seed") throw UserError("command line: " + a + " experiment.seed: sweep seeds with --seed");
      if (!keys_seen.insert(key).second) throw UserError("command line: " + a + " " + key + ": the parameter is swept twice");
      std::vector<json> vs = parse_values(a, key, val.substr(eq + 1));
      if (a == "--grid") {
        axes.push_back({Axis::Grid, {key}, {vs}});
      } else if (zip_axis < 0) {
        zip_axis = static_cast<int>(axes.size());
        axes.push_back({Axis::Zip, {key}, {vs}});
      } else {
        Axis& z = axes[zip_axis];
        if (vs.size() != z.size())
          throw UserError("command line: --zip " + key + " has " + std::to_string(vs.size()) + " values, --zip " + z.keys[0] + " has " +
                          std::to_string(z.size()) + ": zipped lists vary together and need one length");
        z.keys.push_back(key);
        z.values.push_back(vs);
      }
    } else if (a == "--seed") {
      for (uint64_t s : parse_seeds(val)) {
        if (std::find(seeds.begin(), seeds.end(), s) != seeds.end()) throw UserError("command line: --seed " + std::to_string(s) + " is given twice");
        seeds.push_back(s);
      }
    } else if (a == "--jobs") {
      jobs = static_cast<int>(parse_whole("--jobs", val, 1, 4096));
    } else if (a == "--out") {
      out_dir = val;
    } else if (a == "--shard") {
      // (The two halves are kept: strtol's end pointers point into them.)
      const auto sl = val.find('/');
      const std::string left = sl == std::string::npos ? "" : val.substr(0, sl), right = sl == std::string::npos ? "" : val.substr(sl + 1);
      char* e1 = nullptr;
      char* e2 = nullptr;
      const long si = left.empty() ? -1 : std::strtol(left.c_str(), &e1, 10);
      const long sn = right.empty() ? -1 : std::strtol(right.c_str(), &e2, 10);
      if (left.empty() || right.empty() || *e1 || *e2 || sn < 1 || si < 0 || si >= sn)
        throw UserError("command line: --shard " + val + ": expected I/N with 0 <= I < N (0/4 is the first of four)");
      shard_i = static_cast<int>(si);
      shard_n = static_cast<int>(sn);
      sharded = true;
    } else {
      throw UserError("command line: sweep: unrecognised option '" + a + "' (mbpsim sweep --help)");
    }
  }
  if (config_path.empty()) throw UserError(std::string("command line: sweep takes one CONFIG.json\n") + kSweepHelp);
  if (!seeds.empty()) {
    Axis s{Axis::Seed, {"seed"}, {{}}};
    for (uint64_t v : seeds) s.values[0].emplace_back(v);
    axes.push_back(s);
  }
  for (const auto& set : sets) {
    const std::string key = set.substr(0, set.find('='));
    if (keys_seen.count(key)) throw UserError("command line: --set " + set + ": " + key + " is also swept");
  }

  // Every point, checked as `run` will check it, before anything runs.
  size_t total = 1;
  for (const auto& ax : axes) {
    total *= ax.size();
    if (total > 1000000) throw UserError("command line: the sweep has more than 1,000,000 points");
  }
  std::vector<Point> points(total);
  for (size_t idx = 0; idx < total; ++idx) {
    Point& p = points[idx];
    p.index = idx;
    char nm[16];
    std::snprintf(nm, sizeof nm, "p%04zu", idx);
    p.name = nm;
    size_t rest = idx, stride = total;
    for (const auto& ax : axes) {
      stride /= ax.size();
      const size_t k = rest / stride;
      rest %= stride;
      if (ax.kind == Axis::Seed) p.seed = ax.values[0][k].get<uint64_t>();
      else
        for (size_t j = 0; j < ax.keys.size(); ++j) p.sets.emplace_back(ax.keys[j], ax.values[j][k]);
    }
    std::vector<std::string> all = sets;
    for (const auto& [k, v] : p.sets) all.push_back(k + "=" + v.dump());
    try {
      Config c = load_config(config_path, all);
      if (p.seed) c.set("experiment.seed", json(*p.seed), "--seed");
      p.resolved_seed = static_cast<uint64_t>(c.get_int("experiment.seed"));
      p.hash = config_sha256(resolved_for_run(c));
    } catch (const UserError& e) {
      std::string what;
      for (const auto& [k, v] : p.sets) what += (what.empty() ? "" : ", ") + k + "=" + v.dump();
      throw UserError(std::string("sweep point ") + p.name + (what.empty() ? "" : " (" + what + ")") + ": " + e.what());
    }
  }

  // Ranks: one process, or mpirun's, or a shard of a job array.
  std::unique_ptr<SweepRanks> ranks;
  if (launched_by_mpi()) {
    if (sharded) throw UserError("command line: --shard is for runs without mpirun (under mpirun each rank takes its share)");
    if (!g_factory) throw UserError("sweep: started by mpirun, but this mbpsim was built without MPI (install libopenmpi-dev and rebuild)");
    ranks = g_factory();
  }
  const int rank = ranks ? ranks->rank() : 0, nranks = ranks ? ranks->size() : 1;
  const int share = ranks ? rank : shard_i, shares = ranks ? nranks : shard_n;
  if (jobs == 0) {
    int local = 1;
    if (const char* l = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) local = std::max(1, std::atoi(l));
    jobs = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / local);
  }

  const fs::path dir(out_dir);
  std::error_code ec;
  fs::create_directories(dir / "points", ec);
  fs::create_directories(dir / "logs", ec);
  if (ec || !fs::is_directory(dir / "points") || !fs::is_directory(dir / "logs"))
    throw UserError(out_dir + ": cannot make the sweep's folder" + (ec ? ": " + ec.message() : ""));

  auto describe = [&](const Point& p) {
    std::string t;
    for (const auto& [k, v] : p.sets) t += " " + k + "=" + v.dump();
    return t + " seed " + std::to_string(p.resolved_seed);
  };
  auto say = [&](const std::string& text) {
    if (quiet) return;
    if (nranks > 1) std::fprintf(stderr, "[sweep rank %d] %s\n", rank, text.c_str());
    else std::fprintf(stderr, "[sweep] %s\n", text.c_str());
  };

  // Mine: every shares-th point from share; the ones already done are read, the rest queued.
  std::map<size_t, Outcome> outcomes;
  std::vector<size_t> queue;
  for (size_t idx = share; idx < total; idx += shares) {
    Outcome o = read_point(dir / "points" / points[idx].name, points[idx]);
    if (o.complete) outcomes[idx] = std::move(o);
    else queue.push_back(idx);
  }
  const size_t mine = outcomes.size() + queue.size();
  say(std::to_string(total) + " points" + (shares > 1 ? ", " + std::to_string(mine) + " in this share" : "") + ", " +
      std::to_string(outcomes.size()) + " done already, " + std::to_string(jobs) + " at a time, in " + out_dir);

  struct sigaction sa {}, old_int {}, old_term {};
  sa.sa_handler = on_sweep_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  g_sweep_signal = 0;

  const std::string exe = self_exe();
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  struct Running {
    size_t idx;
    std::chrono::steady_clock::time_point t0;
  };
  std::map<pid_t, Running> running;
  size_t next = 0, finished = outcomes.size();
  bool forwarded = false;
  while (next < queue.size() || !running.empty()) {
    while (!g_sweep_signal && next < queue.size() && running.size() < static_cast<size_t>(jobs)) {
      const Point& p = points[queue[next++]];
      std::vector<std::string> av{exe, "run", config_path};
      for (const auto& s : sets) av.insert(av.end(), {"--set", s});
      for (const auto& [k, v] : p.sets) av.insert(av.end(), {"--set", k + "=" + v.dump()});
      if (p.seed) av.insert(av.end(), {"--seed", std::to_string(*p.seed)});
      av.insert(av.end(), {"--out", (dir / "points" / p.name).string(), "--quiet"});
      std::vector<char*> cav;
      for (auto& s : av) cav.push_back(s.data());
      cav.push_back(nullptr);
      posix_spawn_file_actions_t fa;
      posix_spawn_file_actions_init(&fa);
      const std::string outf = (dir / "logs" / (p.name + ".out")).string(), errf = (dir / "logs" / (p.name + ".err")).string();
      posix_spawn_file_actions_addopen(&fa, 1, outf.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      posix_spawn_file_actions_addopen(&fa, 2, errf.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      pid_t pid = 0;
      const int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, cav.data(), environ);
      posix_spawn_file_actions_destroy(&fa);
      if (rc != 0) {
        Outcome o;
        o.status = 1;
        o.message = std::string("cannot start ") + exe + ": " + std::strerror(rc);
        outcomes[p.index] = o;
        ++finished;
        continue;
      }
      running[pid] = {p.index, std::chrono::steady_clock::now()};
    }
    if (running.empty()) break;
    if (g_sweep_signal && !forwarded) {
      // Ctrl-C reaches the points from the terminal; a SIGTERM sent to the sweep alone is passed on.
      for (const auto& r : running) ::kill(r.first, g_sweep_signal);
      forwarded = true;
    }
    int wst = 0;
    const pid_t pid = ::waitpid(-1, &wst, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      internal_error(std::string("waitpid: ") + std::strerror(errno));
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const Point& p = points[it->second.idx];
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - it->second.t0).count();
    running.erase(it);
    const int status = WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst);
    Outcome o = read_point(dir / "points" / p.name, p);
    if (!o.complete || status != 0) {
      // The status is the process's; the message, the run's own line (or the results' reason).
      if (o.message.empty() || !o.complete) o.message = first_error_line(dir / "logs" / (p.name + ".err"));
      if (o.message.empty() && !WIFEXITED(wst)) o.message = std::string("killed by signal ") + std::to_string(WTERMSIG(wst));
      if (!o.complete) o.summary = ordered_json::object();
    }
    o.status = status;
    ++finished;
    char line[64];
    std::snprintf(line, sizeof line, " (%.1f s, %zu/%zu)", secs, finished, mine);
    say(p.name + describe(p) + ": " + (status == 0 ? std::string("ok") : "status " + std::to_string(status) + ": " + o.message) + line);
    outcomes[p.index] = std::move(o);
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  const int signal = g_sweep_signal;

  // Rows, in point order.
  auto row_of = [&](const Point& p, const Outcome& o) {
    ordered_json r;
    r["point"] = p.name;
    for (const auto& [k, v] : p.sets) r[k] = v;
    r["seed"] = p.resolved_seed;
    r["status"] = o.status;
    r["message"] = o.message.empty() ? json(nullptr) : json(o.message);
    flatten(o.summary, "", r);
    flatten_points(o.summary, &r, nullptr);
    return r;
  };
  ordered_json mine_rows = ordered_json::array(), units = ordered_json::object();
  for (const auto& [idx, o] : outcomes) {
    mine_rows.push_back(row_of(points[idx], o));
    for (auto it = o.units.begin(); it != o.units.end(); ++it) units[it.key()] = it.value();
  }
  int worst = 0;  // 0 < 3 (a limit) < 2 (failed)
  for (const auto& [idx, o] : outcomes) {
    const int sev = o.status == 0 ? 0 : o.status == 3 ? 1 : 2;
    worst = std::max(worst, sev);
  }
  ordered_json rows = mine_rows;
  bool writer = true;
  if (ranks) {
    ordered_json mine_msg = {{"rows", mine_rows}, {"units", units}};
    const std::vector<std::string> all = ranks->gather(mine_msg.dump());
    worst = ranks->max(worst);
    writer = rank == 0;
    if (writer) {
      std::vector<ordered_json> merged;
      for (const auto& t : all) {
        const ordered_json m = ordered_json::parse(t);
        for (const auto& r : m["rows"]) merged.push_back(r);
        for (auto it = m["units"].begin(); it != m["units"].end(); ++it) units[it.key()] = it.value();
      }
      std::sort(merged.begin(), merged.end(), [](const ordered_json& a, const ordered_json& b) {
        return a["point"].get<std::string>() < b["point"].get<std::string>();
      });
      rows = ordered_json(merged);
    }
  }

  if (writer) {
    // Columns: the point, the axes, the seed, status and message, then the summaries' fields in
    // the order they first appear.
    ordered_json columns = ordered_json::array();
    std::vector<std::string> names;
    auto add_col = [&](const std::string& n, const std::string& source, const std::string& unit, const std::string& desc) {
      if (std::find(names.begin(), names.end(), n) != names.end()) return;
      names.push_back(n);
      columns.push_back({{"name", n}, {"source", source}, {"unit", unit.empty() ? json(nullptr) : json(unit)}, {"description", desc}});
    };
    add_col("point", "sweep", "", "the point's folder under points/");
    for (const auto& ax : axes)
      if (ax.kind != Axis::Seed)
        for (const auto& k : ax.keys) {
          const ParamSpec* s = schema().find(k);
          add_col(k, "parameter", s->unit, s->desc);
        }
    add_col("seed", "parameter", "", "experiment.seed: the run seed");
    add_col("status", "sweep", "", "the point's exit status (0 finished, 1 bad input, 2 failed, 3 stopped by a limit)");
    add_col("message", "sweep", "", "why a point did not finish (empty when it did)");
    for (const auto& r : rows)
      for (auto it = r.begin(); it != r.end(); ++it) {
        const std::string u = units.contains(it.key()) && units[it.key()].is_string() ? units[it.key()].get<std::string>() : "";
        add_col(it.key(), "summary", u, "");
      }
    const std::string stem = sharded ? "sweep.shard-" + std::to_string(shard_i) + "-of-" + std::to_string(shard_n) : "sweep";
    std::string csv;
    for (size_t c = 0; c < names.size(); ++c) csv += (c ? "," : "") + csv_cell(names[c]);
    csv += "\n";
    ordered_json json_rows = ordered_json::array();
    for (const auto& r : rows) {
      ordered_json full;
      for (size_t c = 0; c < names.size(); ++c) {
        const json v = r.contains(names[c]) ? json(r[names[c]]) : json(nullptr);
        csv += (c ? "," : "") + csv_cell(v);
        full[names[c]] = r.contains(names[c]) ? r[names[c]] : ordered_json(nullptr);
      }
      csv += "\n";
      json_rows.push_back(full);
    }
    ordered_json ax_json = ordered_json::array();
    for (const auto& ax : axes)
      for (size_t j = 0; j < ax.keys.size(); ++j)
        ax_json.push_back({{"key", ax.keys[j]}, {"kind", ax.kind == Axis::Grid ? "grid" : ax.kind == Axis::Zip ? "zip" : "seed"}, {"values", ax.values[j]}});
    ordered_json doc;
    doc["sweep"] = {{"config", config_path}, {"set", sets}, {"axes", ax_json}, {"points", total}, {"mbpsim_version", build_version()}};
    if (sharded) doc["sweep"]["shard"] = std::to_string(shard_i) + "/" + std::to_string(shard_n);
    doc["columns"] = columns;
    doc["rows"] = json_rows;
    write_atomic(dir / (stem + ".csv"), csv);
    write_atomic(dir / (stem + ".json"), doc.dump(2) + "\n");
    const size_t done = rows.size();
    say("wrote " + (dir / (stem + ".csv")).string() + " and .json: " + std::to_string(done) + " of " + std::to_string(total) + " points" +
        (sharded ? " (this shard; a run without --shard writes sweep.csv once every shard is done)" : ""));
  }
  if (signal) return 128 + signal;
  return worst == 0 ? 0 : worst == 1 ? 3 : 2;
}

}  // namespace mbpsim
