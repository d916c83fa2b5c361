#!/bin/bash
# sat20_ab.sh ROUNDS: 3,200/s for 20 s, acf821a (wt_new, V8's default young generation) and 624b0e6 (/work/main, HOOKD_V8_FLAGS), alternated
mkdir -p /tmp/s28/sat20
for i in $(seq 1 $1); do
  for dir in /tmp/s28/wt_new /work/main; do
    name=$(basename $dir)
    out=/tmp/s28/sat20/$name.$i
    (cd $dir && deno run -A main.ts bench --rates 3200 --duration 20 --json > $out.out 2> $out.err)
    tail -1 $out.out > $out.json
    python3 - $out.json $name.$i <<'PY'
import json,sys
for r in json.load(open(sys.argv[1])):
    print(sys.argv[2], r['rate'], 'offered', r['offered'], 'acc', r['accepted'], 'lost', r['lost'], 'p99', r['p99_ms'], 'dg', r.get('datagrams_per_job'), 'cpu', r.get('cpu_ms_per_job'), flush=True)
PY
  done
done
