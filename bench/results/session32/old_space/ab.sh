#!/bin/bash
cd /tmp/m
for r in 1 2 3 4 5; do
  for arm in default initial-old-space-size=256; do
    extra="--trace-gc-nvp"; [ $arm != default ] && extra="$extra,--$arm"
    bash /work/main/bench/results/session31/tools/hostspeed.sh > /tmp/s32/oldsp/$arm.$r.host
    NODE_V8_EXTRA="$extra" deno task hookd bench --rates 200,200,200 --duration 20 --json --latencies-out /tmp/s32/oldsp/$arm.$r.tsv > /tmp/s32/oldsp/$arm.$r.json 2> /tmp/s32/oldsp/$arm.$r.err
  done
done
