#!/bin/bash
# Alternated rounds of `bench --rates 200 --duration 20` with the sweep's warm-up at 100/s for
# 5 s (the default) and for 30 s (3,000 submits: 600 per node, past the HTTP path's Maglev wave).
# From the tree's root. Usage: ab.sh ROUNDS OUT
rounds=$1; out=$2; mkdir -p $out
for r in $(seq 1 $rounds); do
  for w in 5 30; do
    bench/results/session31/tools/hostspeed.sh > $out/w${w}_$r.host 2>&1
    deno task hookd bench --rates 200 --duration 20 --warmup $w --json --latencies-out $out/w${w}_$r.tsv > $out/w${w}_$r.json 2> $out/w${w}_$r.err
  done
done
