#!/bin/bash
# semi_ab.sh ROUNDS: 200/s for 20 s, default young generation (a) and DENO_V8_FLAGS=--min-semi-space-size=16 (b), alternated
mkdir -p /tmp/s28/semi
cd /work/main
for i in $(seq 1 $1); do
  for side in a b; do
    out=/tmp/s28/semi/semi.$side.$i
    if [ $side = b ]; then export DENO_V8_FLAGS=--min-semi-space-size=16; else unset DENO_V8_FLAGS; fi
    deno run -A main.ts bench --rates 200 --duration 20 --json > $out.out 2> $out.err
    unset DENO_V8_FLAGS
    tail -1 $out.out > $out.json
    python3 - $out.json $side.$i <<'PY'
import json,sys
for r in json.load(open(sys.argv[1])):
    procs = r.get('cpu_ms_per_process') or r.get('cpu_per_process') or ''
    print(sys.argv[2], r['rate'], 'acc', r['accepted'], '/', r['offered'], 'lost', r['lost'], 'p50', r['p50_ms'], 'p90', r['p90_ms'], 'p99', r['p99_ms'], 'max', r['max_ms'], 'cpu', r.get('cpu_ms_per_job'), flush=True)
PY
  done
done
