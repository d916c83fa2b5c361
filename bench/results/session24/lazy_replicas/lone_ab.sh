#!/bin/bash
# Alternates /work/main (main) and /work/wt-lazy (lazy): lone jobs, ROUNDS rounds.
for r in $(seq 1 $1); do for t in main lazy; do
  tree=/work/main; [ $t = lazy ] && tree=/work/wt-lazy
  (cd $tree && deno task hookd bench --rates 10 --duration 10 --warmup 2 --json > /tmp/lz/lone.$t.$r.json 2>/dev/null)
  python3 -c "
import json;d=json.load(open('/tmp/lz/lone.$t.$r.json'))[0];print('lone $t $r', {k:d[k] for k in ['p50_ms','p90_ms','p99_ms','ack_p99_ms','fsyncs_per_job','datagrams_per_job','wakeups_per_job','lost','duplicates']})"
done; done
