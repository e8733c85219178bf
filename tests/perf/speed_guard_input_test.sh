#!/usr/bin/env bash
# The speed guard refuses what it cannot judge with exit status 2 and one line naming it,
# before it runs anything (docs/PERFORMANCE.md, "The speed guard").
#   speed_guard_input_test.sh PYTHON GUARD MBPSIM
set -uo pipefail
py=$1 guard=$2 bin=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
expect() {  # expect STATUS TEXT ARGS...
  local want=$1 text=$2
  shift 2
  local out status
  out=$("$py" "$guard" "$@" 2>&1)
  status=$?
  if [ "$status" -ne "$want" ] || ! grep -qF -- "$text" <<<"$out"; then
    echo "FAILED: speed-guard.py $* gave exit $status (want $want) and: $out (want: $text)"
    fails=$((fails + 1))
  fi
}
echo '{' >"$tmp/broken.json"
echo '{"cases": {}}' >"$tmp/empty.json"
expect 2 "$tmp/none/mbpsim: no mbpsim binary there" --bin "$tmp/none/mbpsim"
expect 2 "$tmp/broken.json: not a baseline file" --bin "$bin" --baseline "$tmp/broken.json"
expect 2 "$tmp/empty.json: no baseline for case net-qtree64" --bin "$bin" --baseline "$tmp/empty.json" --case net-qtree64
expect 2 "$tmp/absent.json: no baseline file (make one with --bless)" --bin "$bin" --baseline "$tmp/absent.json"
expect 2 "--tolerance between 0 and 10" --bin "$bin" --tolerance 0
expect 2 "invalid choice: 'no-such-case'" --bin "$bin" --case no-such-case
[ "$fails" -eq 0 ] && echo "every bad input refused"
exit $((fails > 0))
