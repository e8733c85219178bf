#!/usr/bin/env bash
# Runs one model check (README.md here) in a scratch folder and reports states and time.
#   check.sh gbn|fifoe [NAME=VALUE...]    SPIN on gbn.pml or fifoe.pml (NAME=VALUE become -DNAME=VALUE)
#   check.sh directory [NAME=VALUE...]    Rumur on directory.m (NAME=VALUE replace its constants)
# With EXPECT=fail in the environment the check must find an error (a mutant), else none.
# Exit 0 when the verdict is the expected one.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
model=$1
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
start=$(date +%s.%N)
case "$model" in
  gbn|fifoe)
    defs=()
    for a in "$@"; do defs+=("-D$a"); done
    spin "${defs[@]}" -a "$here/$model.pml" >spin.txt 2>&1 || { cat spin.txt; exit 1; }
    cc -O2 -DSAFETY -o pan pan.c || exit 1
    ./pan -m1000000 >out.txt 2>&1
    errors=$(grep -Eo 'errors: [0-9]+' out.txt | grep -Eo '[0-9]+')
    states=$(grep -Eo '[0-9]+ states, stored' out.txt | grep -Eo '^[0-9]+')
    what=$(grep -m1 -E "assertion violated|pan:1" out.txt)
    ;;
  directory)
    cp "$here/directory.m" m.m
    for a in "$@"; do
      k=${a%%=*}; v=${a#*=}
      grep -q "^  $k: [0-9]*;" m.m || { echo "directory.m has no constant $k"; exit 1; }
      sed -i "s/^  $k: [0-9]*;/  $k: $v;/" m.m
    done
    rumur --output m.c m.m || exit 1
    cc -std=c11 -O3 -mcx16 -o m m.c -lpthread -latomic || exit 1
    ./m >out.txt 2>&1
    errors=$(grep -Eo '[0-9]+ error\(s\) found' out.txt | grep -Eo '^[0-9]+')
    [ -z "$errors" ] && grep -q 'No error found' out.txt && errors=0
    states=$(grep -Eo '[0-9]+ states, [0-9]+ rules fired' out.txt | grep -Eo '^[0-9]+')
    what=$(sed -n '/error trace for the error/,/End of the error trace/p' out.txt | grep -v 'error trace' | grep -m1 -E 'failed|deadlock|undefined|Assertion|liveness|error' || true)
    ;;
  *) echo "usage: check.sh gbn|fifoe|directory [NAME=VALUE...]"; exit 1 ;;
esac
secs=$(echo "$(date +%s.%N) - $start" | bc)
echo "$model $*: ${states:-?} states, ${errors:-?} errors, ${secs%.*}.${secs#*.} s ${what:+($what)}" | sed 's/\(\.[0-9][0-9]\)[0-9]* s/\1 s/'
if [ "${EXPECT:-pass}" = fail ]; then
  [ "${errors:-0}" -gt 0 ]
else
  [ "${errors:-1}" = 0 ]
fi
