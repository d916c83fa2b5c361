#!/bin/bash
cd /tmp/m
for arm in initial-old-space-size=256 default; do
  extra="--trace-gc-nvp"; [ $arm != default ] && extra="$extra,--$arm"
  bash /work/main/bench/results/session31/tools/hostspeed.sh > /tmp/s32/oldsp/long_$arm.host
  NODE_V8_EXTRA="$extra" deno task hookd bench --rates 200 --duration 240 --json --latencies-out /tmp/s32/oldsp/long_$arm.tsv > /tmp/s32/oldsp/long_$arm.json 2> /tmp/s32/oldsp/long_$arm.err
done
