#!/bin/bash
# final_ab.sh ROUNDS: the short sweep on a0c7eb7 (before sessions 27-28) and the session's end, alternated
mkdir -p /tmp/s28/final
for i in $(seq 1 $1); do
  for dir in /tmp/s28/wt_a0 /work/main; do
    name=$(basename $dir)
    out=/tmp/s28/final/$name.$i
    (cd $dir && deno task hookd bench --rates 200,1600,3200 --duration 10 --json > $out.out 2> $out.err)
    tail -1 $out.out > $out.json
    python3 - $out.json $name.$i <<'PY'
import json,sys
for r in json.load(open(sys.argv[1])):
    c=r['cpu_cores']; nodes=sum(v for k,v in c.items() if k.startswith('n'))
    print(sys.argv[2], r['rate'], 'acc', r['accepted'], '/', r['offered'], 'lost', r['lost'], 'p99', r['p99_ms'], 'node_cores', round(nodes,2), 'per_node', [c[k] for k in sorted(c) if k.startswith('n')], 'cpu_ms_job', r['cpu_ms_per_job'], flush=True)
PY
  done
done
