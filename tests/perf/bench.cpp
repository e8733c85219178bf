// Host speed of the network and MBP-system models, measured the way users run it: the mbpsim binary on a
// shipped config, one process per case (SystemC elaborates once per process). Figures come
// from the run's host.json; record them in docs/PERFORMANCE.md.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

nlohmann::json last_host_;

void run_case(benchmark::State& state, const std::string& config, const std::string& sets) {
  const auto out = std::filesystem::temp_directory_path() / ("mbpsim_bench_" + std::to_string(::getpid()));
  const std::string cmd = std::string("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 ") + MBPSIM_BINARY + " run " +
                          MBPSIM_SOURCE_DIR + "/configs/" + config + " --quiet " + sets + " --out " +
                          out.string() + " > /dev/null";
  nlohmann::json host;
  for (auto _ : state) {
    if (std::system(cmd.c_str()) != 0) {
      state.SkipWithError("mbpsim run failed");
      return;
    }
    std::ifstream f(out / "host.json");
    host = nlohmann::json::parse(f);
    state.SetIterationTime(host["wall_seconds"].get<double>());
  }
  state.counters["cpu_s"] = host["cpu_seconds"].get<double>();
  state.counters["packets_per_s"] = host["packets_per_second"].get<double>();
  state.counters["sim_cycles_per_s"] = host["simulated_cycles_per_second"].get<double>();
  state.counters["packets"] = host["packets_delivered_total"].get<double>();
  state.counters["peak_MB"] = host["peak_memory_bytes"].get<double>() / 1e6;
  if (host.contains("references")) {
    std::ifstream sf(out / "stats.json");
    const auto summary = nlohmann::json::parse(sf)["summary"];
    state.counters["refs_per_s"] = host["references_per_second"].get<double>();
    state.counters["refs_per_cpu_s"] = host["references"].get<double>() / host["cpu_seconds"].get<double>();
    state.counters["refs"] = host["references"].get<double>();
    state.counters["l1_hit_rate"] = summary["l1_hit_rate"].get<double>();
    if (summary.contains("checks_completed"))
      state.counters["checks_per_s"] = summary["checks_completed"].get<double>() / host["wall_seconds"].get<double>();
  }
  last_host_ = host;
  std::filesystem::remove_all(out);
}

const char* kLong = "--set workload.warmup_cycles=5000 --set workload.measure_cycles=100000 ";

void BM_qtree64_uniform_0_01(benchmark::State& s) {
  run_case(s, "net-qtree64-uniform.json", std::string(kLong) + "--set workload.injection_rate=0.01");
}
void BM_qtree64_uniform_0_05(benchmark::State& s) {
  run_case(s, "net-qtree64-uniform.json", std::string(kLong) + "--set workload.injection_rate=0.05");
}
void BM_qtree4096_uniform_0_01(benchmark::State& s) {
  run_case(s, "net-qtree64-uniform.json",
           "--set network.levels=6 --set workload.injection_rate=0.01 "
           "--set workload.warmup_cycles=2000 --set workload.measure_cycles=5000 --set workload.drain_cycles=0");
}
void BM_qtree4096_uniform_0_0005(benchmark::State& s) {
  run_case(s, "net-qtree64-uniform.json",
           "--set network.levels=6 --set workload.injection_rate=0.0005 "
           "--set workload.warmup_cycles=2000 --set workload.measure_cycles=20000");
}
void BM_default_multicast(benchmark::State& s) { run_case(s, "default.json", ""); }

// The MBP system (issue 3). Tester: operations and checks per host second.
void BM_mbp16_random_tester(benchmark::State& s) { run_case(s, "mbp16-random-tester.json", ""); }
void BM_mbp64_random_tester(benchmark::State& s) { run_case(s, "mbp16-random-tester.json", "--set network.levels=3"); }
void BM_mbp16_sharing(benchmark::State& s) { run_case(s, "mbp16.json", ""); }
void BM_mbp64_sharing(benchmark::State& s) { run_case(s, "mbp64.json", ""); }
// Targets (issue 41), in references per CPU second so that another process on the host does
// not move them: a 64-node workload of L1 hits makes at least 5 M with private data only and
// at least 3 M with shared references (0.5% and 1%). A case below its target is labelled so;
// its figures still print (an error would hide them).
void mbp64_hits(benchmark::State& s, const char* shared, double target) {
  run_case(s, "mbp64.json", std::string("--set sharing.refs_per_proc=50000 --set sharing.shared_fraction=") + shared);
  if (!last_host_.contains("references")) return;
  const double rate = last_host_["references"].get<double>() / last_host_["cpu_seconds"].get<double>();
  if (rate < target) s.SetLabel("below the target of " + std::to_string(static_cast<int>(target / 1e6)) + " M references per CPU second");
}
void BM_mbp64_l1hits_private_only(benchmark::State& s) { mbp64_hits(s, "0", 5e6); }
void BM_mbp64_l1hits_shared_0_5pct(benchmark::State& s) { mbp64_hits(s, "0.005", 3e6); }
void BM_mbp64_l1hits_shared_1pct(benchmark::State& s) { mbp64_hits(s, "0.01", 3e6); }

// Trace replay (issues 6 and 37): traces of the project's own PARMACS kernels, captured by
// mbptrace-cc when the benchmark starts: the six-step FFT with 2^16 points (`fft P 16`, about
// 8 M references) and the blocked LU of a 192 x 192 matrix (`lu P 192 16`, about 7.6 M), each
// with 16 threads on 16 nodes (target 2 M references per second) and 64 threads on 64 nodes
// (target 1 M/s). A case below its target is labelled so; its figures still print.
std::string kernel_trace(const char* kernel, const char* binary, int threads, const std::string& args) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("mbpsim_bench_trace_" + std::string(kernel) + "_" + std::to_string(threads) + "_" + std::to_string(::getpid()));
  if (!std::filesystem::exists(dir / "trace.meta")) {
    const std::string cmd = "MBPTRACE_OUT=" + dir.string() + " " + binary + " " + std::to_string(threads) + " " + args + " > /dev/null";
    if (std::system(cmd.c_str()) != 0) return "";
  }
  return dir.string();
}
void trace_replay(benchmark::State& s, const char* kernel, const char* binary, int threads, const std::string& args, double target) {
  const std::string t = kernel_trace(kernel, binary, threads, args);
  if (t.empty()) {
    s.SkipWithError("could not capture the trace");
    return;
  }
  const int levels = threads == 64 ? 3 : 2;
  run_case(s, "splash-mbp16.json", "--set trace.path=" + t + " --set node.procs=1 --set network.levels=" + std::to_string(levels));
  if (last_host_.contains("references") && last_host_["references"].get<double>() / last_host_["cpu_seconds"].get<double>() < target)
    s.SetLabel("below the target of " + std::to_string(static_cast<int>(target / 1e6)) + " M references per CPU second");
}
void BM_trace_replay_fft_16_threads_16_nodes(benchmark::State& s) { trace_replay(s, "fft", FFT_TRACED, 16, "16", 2e6); }
void BM_trace_replay_fft_64_threads_64_nodes(benchmark::State& s) { trace_replay(s, "fft", FFT_TRACED, 64, "16", 1e6); }
void BM_trace_replay_lu_16_threads_16_nodes(benchmark::State& s) { trace_replay(s, "lu", LU_TRACED, 16, "192 16", 2e6); }
void BM_trace_replay_lu_64_threads_64_nodes(benchmark::State& s) { trace_replay(s, "lu", LU_TRACED, 64, "192 16", 1e6); }

}  // namespace

BENCHMARK(BM_trace_replay_fft_16_threads_16_nodes)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_trace_replay_fft_64_threads_64_nodes)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_trace_replay_lu_16_threads_16_nodes)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_trace_replay_lu_64_threads_64_nodes)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_qtree64_uniform_0_01)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_qtree64_uniform_0_05)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_qtree4096_uniform_0_01)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_qtree4096_uniform_0_0005)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_default_multicast)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mbp16_random_tester)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mbp64_random_tester)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mbp16_sharing)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mbp64_sharing)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mbp64_l1hits_private_only)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mbp64_l1hits_shared_0_5pct)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mbp64_l1hits_shared_1pct)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

// The benchmarks' scratch folders (results, captured traces) go when the run ends.
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  const std::string tag = "_" + std::to_string(::getpid());
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path(), ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("mbpsim_bench_", 0) == 0 && n.size() > tag.size() && n.compare(n.size() - tag.size(), tag.size(), tag) == 0)
      std::filesystem::remove_all(e.path(), ec);
  }
  return 0;
}
