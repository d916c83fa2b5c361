#!/bin/bash
# loss_ab.sh ROUNDS: the loss sweep at 0 and 20 % loss, acf821a (wt_new: V8's default young generation) and the session's end (/work/main: HOOKD_V8_FLAGS), alternated
mkdir -p /tmp/s28/lossab
for i in $(seq 1 $1); do
  for dir in /tmp/s28/wt_new /work/main; do
    name=$(basename $dir)
    out=/tmp/s28/lossab/$name.$i
    (cd $dir && deno run -A main.ts bench --loss 0,0.2 --rate 200 --duration 20 --json > $out.out 2> $out.err)
    tail -1 $out.out > $out.json
    python3 - $out.json $name.$i <<'PY'
import json,sys
for r in json.load(open(sys.argv[1])):
    print(sys.argv[2], 'loss', r['loss'], 'acc', r['accepted'], 'lost', r['lost'], 'p50', r['p50_ms'], 'p99', r['p99_ms'], 'max', r['max_ms'], 'cpu', r.get('cpu_ms_per_job'), flush=True)
PY
  done
done
