#!/bin/bash
# More of the WAL's fsync pacing A/B: the loss sweep at 200/s, alternated, nothing else running.
set -u
out=$1; mkdir -p "$out"
for i in 2 3 4; do
  for t in new base; do
    (cd /tmp/s29/$t && timeout 900 deno run -A main.ts bench --loss 0,0.1,0.2 --rate 200 --duration 10 --json > "$out/loss${i}_$t.json" 2> "$out/loss${i}_$t.err")
  done
done
