#!/usr/bin/env bash
off=$1; len=$2; name=$3
cd /work/main
deno task hookd bench --rates 200 --duration 20 --json --latencies-out /tmp/s26/lat.$name.tsv > /tmp/s26/out.$name.json 2>/tmp/s26/err.$name.txt &
b=$!
until grep -q "step 1/1" /tmp/s26/err.$name.txt 2>/dev/null; do sleep 0.05; done
sleep $off
pgrep -af "main.ts" > /tmp/s26/procs.$name.txt
python3 -c "import time; print(time.time()-time.clock_gettime(time.CLOCK_MONOTONIC))" > /tmp/s26/monooff.$name; perf record -a -k monotonic -e cpu-clock -F 1999 -e sched:sched_switch -o /tmp/s26/sched.$name.data -- sleep $len 2>/dev/null
wait $b
