#!/bin/bash
# Alternated A/B: 90362ab (old) against f56e009 (new), both with session 32's probe.patch.
out=/tmp/s33/ab
for r in 1 2 3; do
  for arm in old new; do
    cd /tmp/$arm
    bash /work/main/bench/results/session31/tools/hostspeed.sh > $out/$arm.$r.host
    NODE_V8_EXTRA="--trace-gc-nvp" deno task hookd bench --rates 200,200,200 --duration 20 --json --latencies-out $out/$arm.$r.tsv > $out/$arm.$r.json 2> $out/$arm.$r.err
  done
done
echo done
