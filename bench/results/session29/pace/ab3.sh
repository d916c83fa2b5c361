#!/bin/bash
# The WAL's fsync pacing, second form (pace only when appends queued during the last fsync),
# A/B against /tmp/s29/base (1780646), alternated, nothing else running.
set -u
out=$1; mkdir -p "$out"
run() { local tree=$1 name=$2; shift 2
  (cd /tmp/s29/$tree && timeout 900 deno run -A main.ts "$@" > "$out/${name}_$tree.json" 2> "$out/${name}_$tree.err"); }
for i in 1 2 3; do for t in new base; do run $t repl$i bench replication; done; done
for i in 1 2 3; do for t in new base; do run $t loss$i bench --loss 0,0.1,0.2 --rate 200 --duration 10 --json; done; done
