#!/usr/bin/env bash
# Mutation test (tests/mutation/README.md): runs COMMAND twice, first as it is, where it must
# pass, then with MBPSIM_MUTANT=NAME, where it must fail: the seeded bug is killed. Exit 0 when
# killed, 1 when the mutant survives (or the clean run fails, which proves nothing).
#   expect_kill.sh NAME COMMAND...
set -uo pipefail
name=$1
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ! "$@" >"$out" 2>&1; then
  echo "mutant $name: the command fails without the mutant, so it cannot judge it:"
  tail -20 "$out"
  exit 1
fi
if MBPSIM_MUTANT=$name "$@" >"$out" 2>&1; then
  echo "mutant $name SURVIVED: the command still passes with the seeded bug"
  tail -5 "$out"
  exit 1
fi
echo "mutant $name killed; what caught it:"
grep -m3 -E "invariant|check|watchdog|FAILED|Failure|Expected|internal error|unknown|undefined" "$out" || tail -3 "$out"
exit 0
