#!/bin/bash
# Is the 1,600/s step's shortfall this session's code or the host? Alternated rounds of
# `bench --rates 1600 --duration 10`: session 30's end (9e95fa7, worktree /tmp/s30) with a 5-s
# warm-up, this session's tree (/tmp/head) with 5 s, and with its new default of 30 s.
# Usage: ab.sh ROUNDS OUT (OUT absolute)
rounds=$1; out=$2; mkdir -p $out
for r in $(seq 1 $rounds); do
  for arm in s30:5 head:5 head:30; do
    tree=${arm%%:*}; w=${arm##*:}
    (cd /tmp/$tree && bash /work/main/bench/results/session31/tools/hostspeed.sh > $out/${tree}_w${w}_$r.host 2>&1 &&
      deno task hookd bench --rates 1600 --duration 10 --warmup $w --json > $out/${tree}_w${w}_$r.json 2> $out/${tree}_w${w}_$r.err)
  done
done
