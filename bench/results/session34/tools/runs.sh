#!/bin/bash
# run ARM DIR ROUND BENCH-ARGS...
set -u
run() {
  local arm=$1 wt=$2 round=$3; shift 3
  local out=/tmp/s34/aged/$arm.$round
  cd "$wt" || exit 1
  bash /work/main/bench/results/session31/tools/hostspeed.sh > "$out.host"
  deno task hookd bench "$@" --json --latencies-out "$out.tsv" > "$out.json" 2> "$out.err"
}
run new /tmp/new 4 --rates 400,200 --duration 300
run old /tmp/head 4 --rates 400,200 --duration 300
