#!/bin/bash
# An aged node: 200 s at 800/s (within capacity) fills each table, then 200 s at 200/s.
cd /tmp/old
bash /work/main/bench/results/session31/tools/hostspeed.sh > /tmp/s33/aged/old.2.host
NODE_V8_EXTRA="--trace-gc-nvp" deno task hookd bench --rates 800,200 --duration 200 --json --latencies-out /tmp/s33/aged/old.2.tsv > /tmp/s33/aged/old.2.json 2> /tmp/s33/aged/old.2.err
echo done
