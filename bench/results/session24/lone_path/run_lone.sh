#!/bin/bash
# usage: run_lone.sh TREE LABEL [env...]
tree=$1; label=$2; shift 2
cd $tree && env "$@" deno task hookd bench --rates 10 --duration 10 --warmup 2 --json > /tmp/lone/$label.json 2>/tmp/lone/$label.err
python3 -c "
import json;d=json.load(open('/tmp/lone/$label.json'))[0];print('$label', {k:d[k] for k in ['p50_ms','p90_ms','p99_ms','ack_p99_ms','cpu_ms_per_job','lost']})"
