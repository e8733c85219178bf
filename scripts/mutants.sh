#!/usr/bin/env bash
# Mutation testing (tests/mutation/README.md): every seeded bug of models/core/mutant.h must be
# caught by its judging test. Prints each verdict and the kill rate; exits 1 if any survives.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build -j"$(nproc)" >/dev/null
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
out=$(ctest --test-dir build -L mutation -V 2>&1 || true)
echo "$out" | grep -E "mutant [a-z_]+ (killed|SURVIVED)|cannot judge" | sed 's/^[0-9]*: //'
total=$(echo "$out" | grep -cE "^[0-9]+: mutant [a-z_]+ (killed|SURVIVED)|cannot judge" || true)
killed=$(echo "$out" | grep -cE "^[0-9]+: mutant [a-z_]+ killed" || true)
echo "kill rate: $killed of $total"
[ "$killed" -eq "$total" ] && [ "$total" -gt 0 ]
