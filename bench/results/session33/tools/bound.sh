#!/bin/bash
# At the catch-up log's bound: PROBE_CATCHUP_BYTES=8 MiB (reached about 70 s in at 200/s), so
# steps 2-4 run with the log evicting as a node's does after ~10 min at the default 64 MiB.
while ! grep -q done /tmp/s33/ab2.log; do sleep 5; done
out=/tmp/s33/bound; mkdir -p $out
for r in 1 2; do
  for arm in old new; do
    cd /tmp/$arm
    bash /work/main/bench/results/session31/tools/hostspeed.sh > $out/$arm.$r.host
    PROBE_CATCHUP_BYTES=8388608 NODE_V8_EXTRA="--trace-gc-nvp" deno task hookd bench --rates 200,200,200,200 --duration 30 --json --latencies-out $out/$arm.$r.tsv > $out/$arm.$r.json 2> $out/$arm.$r.err
  done
done
echo done
