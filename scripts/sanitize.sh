#!/usr/bin/env bash
# The sanitizer build (clang-14, AddressSanitizer with leak detection, UndefinedBehaviorSanitizer,
# libFuzzer coverage) in build-san/, and what runs on it:
#   scripts/sanitize.sh test               the whole test suite under the sanitizers (the fuzz
#                                          corpora replay as part of it)
#   scripts/sanitize.sh fuzz [SECONDS] [NAME...]
#                                          each libFuzzer harness (tests/fuzz/README.md) for
#                                          SECONDS (default 60), one per core at a time, from
#                                          its seed corpus; new inputs
#                                          go to build-san/findings/NAME, never into the
#                                          checked-in corpus. A crash leaves crash-* there and
#                                          exits 1; reproduce it with build-san/bin/fuzz_NAME FILE.
#                                          FUZZ_SEED=N fixes libFuzzer's random seed (default: a
#                                          fresh one, printed); the run with the same seed and
#                                          corpus explores the same inputs in the same order.
#                                          FUZZ_TIMEOUT=S: an input running longer than S
#                                          wall-clock seconds is a hang (default 10; raise it on
#                                          a host busy with other work, where a starved fuzzer
#                                          reports spurious timeouts).
# CI (.ci/run) runs both, the fuzzers for 30 s each with FUZZ_SEED=1, so that CI is
# reproducible; exploration with fresh seeds is for longer runs by hand (tests/fuzz/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-test}
shift || true
CC=clang-14 CXX=clang++-14 cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DMBPSIM_FUZZ=ON \
  -DMBPSIM_BENCH=OFF -DMBPSIM_CAPTURE_KERNELS=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1" >/dev/null
# LeakSanitizer's tracer crashes on about half the runs that had SC_THREADs when it scans
# thread stacks (SystemC's QuickThreads coroutine stacks); at exit the stacks hold nothing of
# ours, so it skips them and still checks every heap and global reference.
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
       ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=use_stacks=0
jobs=$(nproc)
case "$mode" in
  test)
    cmake --build build-san -j"$jobs"
    # The model checks, the generated limits table and the mutants' kill verdicts (whether a
    # test catches a seeded bug: the tests' power, not the code's memory safety) are the same
    # under any build: the plain suite checks them.
    ctest --test-dir build-san --output-on-failure -j"$jobs" -E "^(ModelCheck|Docs|Mutant)\."
    ;;
  fuzz)
    secs=${1:-60}
    shift || true
    names=("$@")
    [ ${#names[@]} -eq 0 ] && names=(config mbcf_packet inet trace)
    targets=()
    for n in "${names[@]}"; do targets+=("fuzz_$n"); done
    cmake --build build-san -j"$jobs" --target "${targets[@]}"
    # No SystemC threads in the fuzzers: LeakSanitizer scans stacks as usual.
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=use_stacks=1
    seed=${FUZZ_SEED:-$(( (RANDOM << 15 | RANDOM) + 1 ))}
    echo "fuzz seed $seed (replay this run with FUZZ_SEED=$seed)"
    # One harness per core at a time (each is one process); the verdicts print in the order named.
    fuzz_one() {
      local n=$1 work=build-san/findings/$1
      local log=$work/log.txt
      if build-san/bin/fuzz_$n -seed="$seed" -max_total_time="$secs" -rss_limit_mb=4096 -timeout="${FUZZ_TIMEOUT:-10}" -max_len=8192 \
           -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "tests/fuzz/corpus/$n" >"$log" 2>&1; then
        local execs cov
        execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
        cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 || true)
        echo "fuzz_$n: ${secs} s, $execs executions, $cov, no failure" >"$work/verdict"
      else
        { echo "fuzz_$n: FAILED, see $log and $work/crash-*"; tail -40 "$log"; } >"$work/verdict"
      fi
    }
    for n in "${names[@]}"; do
      rm -rf "build-san/findings/$n" && mkdir -p "build-san/findings/$n/corpus"
    done
    running=0
    for n in "${names[@]}"; do
      if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
      fuzz_one "$n" &
      running=$((running + 1))
    done
    wait
    rc=0
    for n in "${names[@]}"; do
      verdict=build-san/findings/$n/verdict
      cat "$verdict" 2>/dev/null || { echo "fuzz_$n: no verdict (the harness did not finish)"; rc=1; }
      grep -q "^fuzz_$n: FAILED" "$verdict" 2>/dev/null && rc=1
    done
    exit $rc
    ;;
  *) echo "usage: scripts/sanitize.sh test | fuzz [SECONDS] [NAME...]" >&2; exit 1 ;;
esac
