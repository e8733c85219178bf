#!/usr/bin/env bash
# One entry point for a fresh Debian bookworm machine: installs the Debian packages that are
# missing, configures and builds, then runs the default experiment (run), the whole test
# suite (test: unit, integration, golden, fuzz-corpus replay, mutation and model-checking
# tests), the benchmarks (bench), or the sanitizer suite and a short fuzzing run that CI adds
# (sanitize: clang-14, ASan+UBSan+LSan, 30 s per fuzzer; docs/CORRECTNESS.md), or the chapter-6
# figures (figures: python3-matplotlib; docs/figures/).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-run}
case "$mode" in run|test|bench|sanitize|figures) ;; *) echo "usage: scripts/setup.sh run|test|bench|sanitize|figures" >&2; exit 1 ;; esac

pkgs=(build-essential cmake pkg-config libsystemc-dev nlohmann-json3-dev zlib1g-dev
      libboost-program-options-dev nettle-dev libgmp-dev libgtest-dev libbenchmark-dev m4 valgrind
      spin rumur bc python3)
[ "$mode" = sanitize ] && pkgs+=(clang-14 libclang-rt-14-dev)
# The tests also run a sweep under mpirun and draw a plot (sim/README.md, "Sweeps", "Plots").
[ "$mode" = test ] || [ "$mode" = sanitize ] && pkgs+=(openmpi-bin libopenmpi-dev python3-matplotlib)
[ "$mode" = figures ] && pkgs+=(python3-matplotlib)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
# The default experiment needs the simulator alone; the rest (tests, fuzz replayers, mutants,
# benchmarks, capture kernels) is built by the modes that use it.
if [ "$mode" = run ] || [ "$mode" = figures ]; then cmake --build build -j"$jobs" --target mbpsim; else cmake --build build -j"$jobs"; fi
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1

case "$mode" in
  run) build/bin/mbpsim run configs/default.json --out out/default ;;
  test) ctest --test-dir build --output-on-failure -j"$jobs" ;;
  bench) build/bin/bench_mbpsim --benchmark_counters_tabular=true ;;
  sanitize) scripts/sanitize.sh test && FUZZ_SEED=1 scripts/sanitize.sh fuzz 30 ;;
  figures) scripts/figures.sh ;;
esac
