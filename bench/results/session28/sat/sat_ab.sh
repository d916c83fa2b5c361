#!/bin/bash
# sat_ab.sh ROUNDS TAG DURATION TREE...: the 3,200/s step alone for DURATION s on each tree in
# turn, ROUNDS times; rows go to /tmp/s28/sat/TAG.<tree>.<round>.json.
# As run: `sat_ab.sh 2 bisect 10 wt_ack wt_new wt_v1`, `sat_ab.sh 2 where 10 /work/main wt_new
# wt_ack` (this folder), and `sat_ab.sh 3 sat20 20 wt_new /work/main` (../sat20/, whose files
# were then named <tree>.<round>.json).
rounds=$1; tag=$2; duration=$3; shift 3
mkdir -p /tmp/s28/sat
for i in $(seq 1 $rounds); do
  for dir in "$@"; do
    name=$(basename $dir)
    out=/tmp/s28/sat/$tag.$name.$i
    (cd $dir && deno run -A main.ts bench --rates 3200 --duration $duration --json > $out.out 2> $out.err)
    tail -1 $out.out > $out.json
    python3 - $out.json $name.$i <<'PY'
import json,sys
for r in json.load(open(sys.argv[1])):
    print(sys.argv[2], r['rate'], 'offered', r['offered'], 'acc', r['accepted'], 'lost', r['lost'], 'p99', r['p99_ms'], 'dg', r.get('datagrams_per_job'), 'cpu', r.get('cpu_ms_per_job'), flush=True)
PY
  done
done
