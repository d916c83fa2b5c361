#!/bin/bash
# Session 34's real-process runs (aged/), in the order made. Worktrees: /tmp/head at 71c71c0 (the
# product as session 33 left it), /tmp/new at the tree named below. Output in /tmp/s34/aged; the
# committed copies gzip the .err files and leave out the TSVs (windows.txt summarises them).
#
# Run 3 came first, on /tmp/new at 0f786e2, with the same command as run 4; a helper was running
# tests and mutants on the machine during its first ~240 s, so it is kept but not compared:
#   run new /tmp/new 3 --rates 400,200 --duration 300
# Runs 4 (below) were made back to back with nothing else running, /tmp/new at f2f99ff.
#
# One-process probe (micro/), per tree, alternated new/main twice, then 71c71c0 once:
#   deno run -A --v8-flags=--expose-gc --config deno.json \
#     bench/results/session34/micro/checkpoint_cost.ts 143000 300000
#
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

# sweep/ (the final read): the short sweep on 71c71c0, then on 150af16 (/tmp/new).
#   deno task hookd bench --rates 200,1600,3200 --duration 10 --json > sweep/ARM.json 2> sweep/ARM.err

# gc/: the aged command once more on 5496d0e with session 32's probe patch (/tmp/gc), nodes traced:
#   NODE_V8_EXTRA=--trace-gc-nvp deno task hookd bench --rates 400,200 --duration 300 --json \
#     --latencies-out /tmp/s34/gc/new.5.tsv > new.5.json 2> new.5.err
#   python3 bench/results/session33/tools/gc_table.py bench/results/session34/gc > gc/gc_table.txt
#   python3 bench/results/session34/tools/long_pauses.py gc/new.5.err.gz
# sweep/ after the final read's mends: final (fbe3f3a, /work/main), before2 (71c71c0), final2 (fbe3f3a).
