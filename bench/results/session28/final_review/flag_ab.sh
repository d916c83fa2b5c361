#!/bin/bash
# flag_ab.sh ROUNDS: 200/s for 20 s, the session's end without the flag in self_command (wt_off) and with it (/work/main), alternated
mkdir -p /tmp/s28/flag
for i in $(seq 1 $1); do
  for dir in /tmp/s28/wt_off /work/main; do
    name=$(basename $dir)
    out=/tmp/s28/flag/$name.$i
    (cd $dir && deno run -A main.ts bench --rates 200 --duration 20 --json > $out.out 2> $out.err)
    tail -1 $out.out > $out.json
    python3 - $out.json $name.$i <<'PY'
import json,sys
for r in json.load(open(sys.argv[1])):
    c=r['cpu_cores']; nodes=sum(v for k,v in c.items() if k.startswith('n'))
    print(sys.argv[2], r['rate'], 'acc', r['accepted'], 'lost', r['lost'], 'p50', r['p50_ms'], 'p99', r['p99_ms'], 'max', r['max_ms'], 'node_cores', round(nodes,2), 'cpu_ms_job', r['cpu_ms_per_job'], flush=True)
PY
  done
done
