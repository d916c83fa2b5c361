#!/bin/bash
cd /tmp/m
for r in 1 2; do
  for arm in 3600000 1000; do
    bash /work/main/bench/results/session31/tools/hostspeed.sh > /tmp/s32/ret/r$arm.$r.host
    PROBE_RETENTION_MS=$arm NODE_V8_EXTRA="--trace-gc-nvp" deno task hookd bench --rates 200,200,200 --duration 20 --json --latencies-out /tmp/s32/ret/r$arm.$r.tsv > /tmp/s32/ret/r$arm.$r.json 2> /tmp/s32/ret/r$arm.$r.err
  done
done
