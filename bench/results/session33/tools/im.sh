#!/bin/bash
for arm in old new; do
  cd /tmp/$arm
  bash /work/main/bench/results/session31/tools/hostspeed.sh > /tmp/s33/im/$arm.1.host
  NODE_V8_EXTRA="--trace-gc-nvp,--trace-incremental-marking" deno task hookd bench --rates 200,200,200 --duration 20 --json > /tmp/s33/im/$arm.1.json 2> /tmp/s33/im/$arm.1.err
done
echo done
