#!/bin/bash
# ab.sh ROUNDS TAG BASE_DIR NEW_DIR -- bench args
rounds=$1; tag=$2; base=$3; new=$4; shift 5
mkdir -p /tmp/s28/ab
for i in $(seq 1 $rounds); do
  for side in base new; do
    dir=$base; [ $side = new ] && dir=$new
    out=/tmp/s28/ab/$tag.$side.$i.json
    (cd $dir && deno run -A main.ts bench "$@" --json > $out.raw 2> $out.err)
    tail -1 $out.raw > $out
    python3 - "$out" "$tag.$side.$i" <<'PY'
import json,sys
rows=json.load(open(sys.argv[1]))
for r in rows:
    cpu=r.get('cpu_ms_per_job'); 
    print(sys.argv[2], r['rate'], r.get('loss'), 'acc', r['accepted'], '/', r['offered'], 'lost', r['lost'], 'p50', r['p50_ms'], 'p99', r['p99_ms'], 'dg/job', r.get('datagrams_per_job'), 'fs/job', r.get('fsyncs_per_job'), 'cpu', cpu, flush=True)
PY
  done
done
