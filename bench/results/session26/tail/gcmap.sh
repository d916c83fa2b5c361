#!/usr/bin/env bash
name=$1; flags=$2
cd /work/main
python3 -c "import time; print(time.time()-time.clock_gettime(time.CLOCK_BOOTTIME))" > /tmp/s26/bootoff.$name
DENO_V8_FLAGS=$flags deno task hookd bench --rates 200 --duration 20 --json --latencies-out /tmp/s26/lat.$name.tsv > /tmp/s26/out.$name.json 2>/tmp/s26/err.$name.txt &
b=$!
until grep -q "step 1/1" /tmp/s26/err.$name.txt 2>/dev/null; do sleep 0.05; done
for p in $(pgrep -f "main.ts node --id"); do echo "$p $(awk '{print $22}' /proc/$p/stat) $(tr '\0' ' ' < /proc/$p/cmdline | grep -o -- '--id n[0-9]')"; done > /tmp/s26/starts.$name
wait $b
