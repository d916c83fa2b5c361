#!/bin/bash
# usage: perf_ab.sh RATE ROUNDS [extra bench args] — alternates /work/main and /work/wt-lazy.
rate=$1; rounds=$2; shift 2
for r in $(seq 1 $rounds); do
  for t in main lazy; do
    tree=/work/main; [ $t = lazy ] && tree=/work/wt-lazy
    (cd $tree && deno task hookd bench --rates $rate --duration 20 --json "$@" > /tmp/lz/r$rate.$t.$r.json 2>/tmp/lz/r$rate.$t.$r.err) &
    bp=$!
    sleep 16
    PIDS=$(pgrep -f "main.ts node --id" | paste -sd,)
    perf stat -x, -e task-clock,context-switches -p $PIDS -- sleep 8 2> /tmp/lz/r$rate.$t.$r.perf
    wait $bp
    python3 - $rate $t $r <<'PY'
import sys, json
rate, mode, r = sys.argv[1:]
d = json.load(open(f'/tmp/lz/r{rate}.{mode}.{r}.json'))[0]
perf = {}
for l in open(f'/tmp/lz/r{rate}.{mode}.{r}.perf'):
    p = l.strip().split(',')
    if len(p) > 3 and p[0]: perf[p[2]] = float(p[0])
print(f"{rate}/s {mode:5s} round {r}: five nodes' CPU over 8 s {perf.get('task-clock', 0) / 1000:.2f} s, "
      f"switches {perf.get('context-switches', 0) / 1000:.1f}k | accepted {d['accepted']} p50 {d['p50_ms']} "
      f"p99 {d['p99_ms']} ack p99 {d['ack_p99_ms']} fsyncs/job {d['fsyncs_per_job']} dg/job {d['datagrams_per_job']} lost {d['lost']} dup {d['duplicates']}")
PY
  done
done
