#!/usr/bin/env bash
# ab.sh ROUNDS TAG -- bench args : alternate base (/tmp/s27/wt_base) and new (/work/main), --trace-gc on the nodes' runtime
rounds=$1; tag=$2; shift 3
for r in $(seq 1 $rounds); do
  for kind in base new; do
    dir=/work/main; [ $kind = base ] && dir=/tmp/s27/wt_base
    name=$tag.$kind.$r
    (cd $dir && DENO_V8_FLAGS=--trace-gc deno run -A main.ts bench "$@" --json --latencies-out /tmp/s27/lat.$name.tsv > /tmp/s27/out.$name.json 2>/tmp/s27/err.$name.txt)
    gc=$(python3 /tmp/s27/gcsum.py /tmp/s27/out.$name.json /tmp/s27/err.$name.txt | tail -1)
    grep "^\[{" /tmp/s27/out.$name.json | tail -1 | python3 -c "
import json,sys
for r in json.load(sys.stdin): print('$name', r['rate'], 'acc',r['accepted'],'/',r['offered'], 'p50',r['p50_ms'],'p99',r['p99_ms'],'max',r['max_ms'],'cpu',r['cpu_ms_per_job'], 'cores', r.get('cpu_cores'), '| $gc')"
  done
done
