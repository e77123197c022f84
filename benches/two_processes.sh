#!/usr/bin/env bash
# Two processes on the local model at once, against one alone (issue 41,
# item 7): the same four everyday requests (tuning half), first in one
# process, then in two started side by side. Prints each process's wall
# time. BENCHMARKS.md ("Two processes on one machine") has the figures.
#
#   cargo build -p agentry-eval
#   benches/two_processes.sh [path/to/agentry-eval]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/debug/agentry-eval}
copy=$(mktemp)
cp "$bin" "$copy" # a rebuild meanwhile does not change what runs
one() {
  local started=$SECONDS
  "$copy" everyday --split tune --limit 4 --out /dev/null >"$1" 2>&1
  echo "$2: $((SECONDS - started)) s, $(grep -c '^\[waiting' "$1" || true) waiting notices"
}
logs=$(mktemp -d)
one "$logs/alone.log" "alone"
one "$logs/first.log" "side by side, first" &
one "$logs/second.log" "side by side, second" &
wait
rm -rf "$copy" "$logs"
