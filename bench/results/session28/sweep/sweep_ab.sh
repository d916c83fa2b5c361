#!/bin/bash
# sweep_ab.sh FIRST LAST ORDER: the short sweep on base (7b17a90, worktree /tmp/s28/wt_ack) and
# new (acf821a, /work/main), rounds FIRST..LAST, ORDER "base-first" or "new-first".
# Rounds 1-3 ran base-first, rounds 4-5 new-first (as two scripts then; merged here).
first=$1; last=$2; order=${3:-base-first}
sides="base new"; [ "$order" = new-first ] && sides="new base"
mkdir -p /tmp/s28/sweep
for i in $(seq $first $last); do
  for side in $sides; do
    dir=/tmp/s28/wt_ack; [ $side = new ] && dir=/work/main
    out=/tmp/s28/sweep/sweep.$side.$i
    (cd $dir && deno run -A main.ts bench --rates 200,1600,3200 --duration 10 --json > $out.out 2> $out.err)
    tail -1 $out.out > $out.json
    python3 - $out.json $side.$i <<'PY'
import json,sys
for r in json.load(open(sys.argv[1])):
    print(sys.argv[2], r['rate'], 'acc', r['accepted'], '/', r['offered'], 'lost', r['lost'], 'p50', r['p50_ms'], 'p99', r['p99_ms'], 'dg', r.get('datagrams_per_job'), 'cpu', r.get('cpu_ms_per_job'), flush=True)
PY
  done
done
