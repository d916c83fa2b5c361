#!/bin/bash
out=/tmp/s33/ab
for r in 4 5 6; do
  for arm in new old; do
    cd /tmp/$arm
    bash /work/main/bench/results/session31/tools/hostspeed.sh > $out/$arm.$r.host
    NODE_V8_EXTRA="--trace-gc-nvp" deno task hookd bench --rates 200,200,200 --duration 20 --json --latencies-out $out/$arm.$r.tsv > $out/$arm.$r.json 2> $out/$arm.$r.err
  done
done
mkdir -p /tmp/s33/long
for arm in old new; do
  cd /tmp/$arm
  bash /work/main/bench/results/session31/tools/hostspeed.sh > /tmp/s33/long/$arm.1.host
  NODE_V8_EXTRA="--trace-gc-nvp" deno task hookd bench --rates 200 --duration 240 --json --latencies-out /tmp/s33/long/$arm.1.tsv > /tmp/s33/long/$arm.1.json 2> /tmp/s33/long/$arm.1.err
done
echo done
