#!/bin/bash
# An aged node: 150 s at 1,200/s fills each node's table with delivered jobs, then 150 s at 200/s.
cd /tmp/old
bash /work/main/bench/results/session31/tools/hostspeed.sh > /tmp/s33/aged/old.1.host
NODE_V8_EXTRA="--trace-gc-nvp" deno task hookd bench --rates 1200,200 --duration 150 --json --latencies-out /tmp/s33/aged/old.1.tsv > /tmp/s33/aged/old.1.json 2> /tmp/s33/aged/old.1.err
echo done
