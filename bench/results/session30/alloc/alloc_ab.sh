#!/bin/bash
# `bench cost` at one rate, with profiles, on the base tree and the new tree in turn; keeps the
# JSON and stderr and prints a line a run. alloc_ab.sh ROUNDS RATE BASE_DIR NEW_DIR OUTDIR
set -u
rounds=$1; rate=$2; base=$3; new=$4; out=$5
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do
  for tree in base new; do
    dir=$base; [ $tree = new ] && dir=$new
    prof=$(mktemp -d)  # the nodes' profiles, read by bench cost and removed after the run
    (cd $dir && timeout 900 deno task hookd bench cost --rates "$rate" --duration 10 --idle 0 --floor-ops 100 --profiles-out "$prof" --json > "$out/cost_${rate}_${tree}_$i.json" 2> "$out/cost_${rate}_${tree}_$i.err")
    rm -rf "$prof"
    python3 - "$out/cost_${rate}_${tree}_$i.json" "$tree" "$i" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); r = d["rows"][0]
print(sys.argv[2], sys.argv[3], "accepted", r["accepted"], "nodes_cpu_us", r["nodes_cpu_us_per_job"], "alloc_kb_job_node", r["alloc_kb_per_job_node"], "p99", r["p99_ms"], "threads", r.get("threads_us_per_job"))
PY
  done
done
