#!/bin/bash
# Alternated rounds of `bench --rates 200 --duration 20` (30-s warm-up) on two worktrees of one
# commit: /tmp/base as committed, /tmp/lz with lazySendMs and lazyAppendMs 100 instead of 20.
# Usage: ab.sh ROUNDS OUT (OUT absolute)
rounds=$1; out=$2; mkdir -p $out
for r in $(seq 1 $rounds); do
  for arm in base lz; do
    (cd /tmp/$arm && bash /work/main/bench/results/session31/tools/hostspeed.sh > $out/${arm}_$r.host 2>&1 &&
      deno task hookd bench --rates 200 --duration 20 --json > $out/${arm}_$r.json 2> $out/${arm}_$r.err)
  done
done
