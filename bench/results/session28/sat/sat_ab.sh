#!/bin/bash
# sat_ab.sh ROUNDS TAG TREE...: 3,200/s for 10 s on each tree in turn, ROUNDS times
rounds=$1; tag=$2; shift 2
mkdir -p /tmp/s28/sat
for i in $(seq 1 $rounds); do
  for dir in "$@"; do
    name=$(basename $dir)
    out=/tmp/s28/sat/$tag.$name.$i
    (cd $dir && deno run -A main.ts bench --rates 3200 --duration 10 --json > $out.out 2> $out.err)
    tail -1 $out.out > $out.json
    python3 - $out.json $name.$i <<'PY'
import json,sys
for r in json.load(open(sys.argv[1])):
    print(sys.argv[2], r['rate'], 'acc', r['accepted'], '/', r['offered'], 'lost', r['lost'], 'p99', r['p99_ms'], 'dg', r.get('datagrams_per_job'), 'cpu', r.get('cpu_ms_per_job'), flush=True)
PY
  done
done
