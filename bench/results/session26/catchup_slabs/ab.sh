#!/usr/bin/env bash
# ab.sh ROUNDS TAG -- bench args : alternate base (wt_base) and new (/work/main), trace-gc on
rounds=$1; tag=$2; shift 3
for r in $(seq 1 $rounds); do
  for kind in base new; do
    dir=/work/main; [ $kind = base ] && dir=/tmp/s26/wt_base
    name=$tag.$kind.$r
    (cd $dir && DENO_V8_FLAGS=--trace-gc deno run -A main.ts bench "$@" --json --latencies-out /tmp/s26/lat.$name.tsv > /tmp/s26/out.$name.json 2>/tmp/s26/err.$name.txt)
    mc=$(grep -c "\[n.\].*Mark-Compact" /tmp/s26/err.$name.txt)
    grep "^\[{" /tmp/s26/out.$name.json | tail -1 | python3 -c "
import json,sys
for r in json.load(sys.stdin): print('$name', r['rate'], 'acc',r['accepted'],'/',r['offered'], 'p50',r['p50_ms'],'p90',r['p90_ms'],'p99',r['p99_ms'],'max',r['max_ms'],'cpu',r['cpu_ms_per_job'], 'MC $mc', 'rss',r.get('node_rss_mb'),'heap',r.get('node_heap_used_mb'),'ext',r.get('node_external_mb'))"
  done
done
