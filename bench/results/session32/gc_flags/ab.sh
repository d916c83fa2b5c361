#!/bin/bash
cd /tmp/m
for r in 1 2; do
  for arm in default no-allocation-site-pretenuring no-page-promotion; do
    extra="--trace-gc-nvp"; [ $arm != default ] && extra="$extra,--$arm"
    bash /work/main/bench/results/session31/tools/hostspeed.sh > /tmp/s32/pre/$arm.$r.host
    NODE_V8_EXTRA="$extra" deno task hookd bench --rates 200,200,200 --duration 20 --json --latencies-out /tmp/s32/pre/$arm.$r.tsv > /tmp/s32/pre/$arm.$r.json 2> /tmp/s32/pre/$arm.$r.err
  done
done
