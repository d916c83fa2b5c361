#!/usr/bin/env bash
for kind in base new; do
  dir=/work/main; [ $kind = base ] && dir=/tmp/s27/wt_base
  (cd $dir && deno run -A main.ts bench --rates 200,1600,3200 --duration 10 --json > /tmp/s27/out.sw2.$kind.json 2>/tmp/s27/err.sw2.$kind.txt)
  grep "^\[{" /tmp/s27/out.sw2.$kind.json | tail -1 | python3 -c "
import json,sys
for r in json.load(sys.stdin): print('$kind', r['rate'], 'acc',r['accepted'],'/',r['offered'], 'lost', r.get('lost'), 'p50',r['p50_ms'],'p99',r['p99_ms'],'cpu',r['cpu_ms_per_job'], 'node cores', round(sum(v for k,v in r.get('cpu_cores',{}).items() if k.startswith('n')),2))"
done
