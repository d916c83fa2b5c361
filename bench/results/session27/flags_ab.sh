#!/usr/bin/env bash
# flags_ab.sh ROUNDS TAG "FLAGS_A" "FLAGS_B" -- bench args: same tree (/work/main), alternating V8 flags
rounds=$1; tag=$2; fa=$3; fb=$4; shift 5
for r in $(seq 1 $rounds); do
  for kind in a b; do
    fl=$fa; [ $kind = b ] && fl=$fb
    name=$tag.$kind.$r
    (cd /work/main && DENO_V8_FLAGS=--trace-gc$fl deno run -A main.ts bench "$@" --json --latencies-out /tmp/s27/lat.$name.tsv > /tmp/s27/out.$name.json 2>/tmp/s27/err.$name.txt)
    mc=$(cat /tmp/s27/out.$name.json /tmp/s27/err.$name.txt | grep -c "\[n.\].*Mark-Compact")
    sc=$(cat /tmp/s27/out.$name.json /tmp/s27/err.$name.txt | grep -c "\[n.\].*Scavenge")
    grep "^\[{" /tmp/s27/out.$name.json | tail -1 | python3 -c "
import json,sys
for r in json.load(sys.stdin): print('$name', r['rate'], 'acc',r['accepted'],'/',r['offered'], 'p50',r['p50_ms'],'p90',r['p90_ms'],'p99',r['p99_ms'],'max',r['max_ms'],'cpu',r['cpu_ms_per_job'], 'MC $mc SC $sc', 'rss',r.get('node_rss_mb'),'heap',r.get('node_heap_used_mb'))"
  done
done
