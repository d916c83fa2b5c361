#!/bin/bash
# usage: perf_ab.sh RATE ROUNDS — alternates default and DENO_V8_FLAGS=--single-threaded:
# `deno task hookd bench --rates RATE --duration 20 --json`, and perf stat (task-clock, context
# switches) over 8 s of the step on the five nodes, starting 16 s after the bench starts.
rate=$1; rounds=$2
for r in $(seq 1 $rounds); do
  for mode in default single; do
    if [ $mode = single ]; then E="DENO_V8_FLAGS=--single-threaded"; else E="X_UNUSED=1"; fi
    (cd /work/main && env $E deno task hookd bench --rates $rate --duration 20 --json > /tmp/st/r$rate.$mode.$r.json 2>/tmp/st/r$rate.$mode.$r.err) &
    bp=$!
    sleep 16
    PIDS=$(pgrep -f "main.ts node --id" | paste -sd,)
    perf stat -x, -e task-clock,context-switches -p $PIDS -- sleep 8 2> /tmp/st/r$rate.$mode.$r.perf
    wait $bp
    python3 - $rate $mode $r <<'PY'
import sys, json
rate, mode, r = sys.argv[1:]
d = json.load(open(f'/tmp/st/r{rate}.{mode}.{r}.json'))[0]
perf = {}
for l in open(f'/tmp/st/r{rate}.{mode}.{r}.perf'):
    p = l.strip().split(',')
    if len(p) > 3 and p[0]: perf[p[2]] = float(p[0])
print(f"{rate}/s {mode:7s} round {r}: five nodes' CPU over 8 s {perf.get('task-clock', 0) / 1000:.2f} s, "
      f"switches {perf.get('context-switches', 0) / 1000:.1f}k | accepted {d['accepted']} p50 {d['p50_ms']} "
      f"p99 {d['p99_ms']} CPU ms/job {d['cpu_ms_per_job']} dg/job {d['datagrams_per_job']} lost {d['lost']}")
PY
  done
done
