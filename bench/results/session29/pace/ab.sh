#!/bin/bash
# The WAL's fsync pacing, A/B: /tmp/s29/base (1780646, no pacing) against /tmp/s29/new (1780646
# plus the pacing change), alternated, nothing else running.
# ab.sh OUT
set -u
out=$1; mkdir -p "$out"
run() { # tree name args...
  local tree=$1 name=$2; shift 2
  (cd /tmp/s29/$tree && timeout 900 deno run -A main.ts "$@" > "$out/${name}_$tree.json" 2> "$out/${name}_$tree.err")
}
for i in 1 2 3; do
  for t in base new; do run $t repl$i bench replication; done
done
for i in 1 2 3; do
  for t in base new; do run $t sweep$i bench --rates 200,3200 --duration 10 --json; done
done
for i in 1 2; do
  for t in base new; do run $t lone$i bench --rates 10 --duration 10 --warmup 2 --json; done
done
for t in base new; do run $t loss1 bench --loss 0,0.1,0.2 --rate 200 --duration 10 --json; done
