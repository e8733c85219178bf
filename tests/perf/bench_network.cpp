// Host speed of the network model, measured the way users run it: the mbpsim binary on a
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
  state.counters["packets_per_s"] = host["packets_per_second"].get<double>();
  state.counters["sim_cycles_per_s"] = host["simulated_cycles_per_second"].get<double>();
  state.counters["packets"] = host["packets_delivered_total"].get<double>();
  state.counters["peak_MB"] = host["peak_memory_bytes"].get<double>() / 1e6;
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

}  // namespace

BENCHMARK(BM_qtree64_uniform_0_01)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_qtree64_uniform_0_05)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_qtree4096_uniform_0_01)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_qtree4096_uniform_0_0005)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_default_multicast)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
