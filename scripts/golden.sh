#!/usr/bin/env bash
# Golden regression (tests/integration/golden_test.cpp): every config in configs/ runs with the
# short window of tests/golden/windows.json and its stats.json is compared with the checked-in
# tests/golden/<config>.stats.json.
#   scripts/golden.sh          check (what CI runs as part of the test suite)
#   scripts/golden.sh bless    rewrite the golden files after an intended change; review the
#                              diff (git diff tests/golden) and commit it with the change
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build -j"$(nproc)" --target integration_golden mbpsim >/dev/null
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
case "${1:-check}" in
  check) ctest --test-dir build -R '^Configs/Golden\.' --output-on-failure -j"$(nproc)" ;;
  bless) MBPSIM_GOLDEN_BLESS=1 ctest --test-dir build -R '^Configs/Golden\.' -j"$(nproc)" >/dev/null
         git status --short tests/golden ;;
  *) echo "usage: scripts/golden.sh [check|bless]" >&2; exit 1 ;;
esac
