#!/bin/bash
# Alternated rounds of `bench --rates 200 --duration 20` (the tree's default warm-up) in the
# worktrees /tmp/ARM, one run per arm a round, each after the host speed probe.
# Usage: ab_worktrees.sh ROUNDS OUT ARM... (OUT absolute)
rounds=$1; out=$2; shift 2; mkdir -p $out
for r in $(seq 1 $rounds); do
  for arm in "$@"; do
    (cd /tmp/$arm && bash /work/main/bench/results/session31/tools/hostspeed.sh > $out/${arm}_$r.host 2>&1 &&
      deno task hookd bench --rates 200 --duration 20 --json > $out/${arm}_$r.json 2> $out/${arm}_$r.err)
  done
done
