#!/bin/bash
# Alternates `bench cost` at one rate on the base tree and the new tree; keeps the JSON and stderr.
# alloc_ab.sh ROUNDS RATE OUTDIR
set -u
rounds=$1; rate=$2; out=$3
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do
  for tree in base new; do
    (cd /tmp/s29/$tree && timeout 900 deno run -A main.ts bench cost --rates "$rate" --duration 10 --idle 0 --floor-ops 100 --profiles-out "/tmp/s29/prof_${tree}_${i}" --json > "$out/cost_${rate}_${tree}_$i.json" 2> "$out/cost_${rate}_${tree}_$i.err")
    python3 - "$out/cost_${rate}_${tree}_$i.json" "$tree" "$i" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); r = d["rows"][0]
print(sys.argv[2], sys.argv[3], "accepted", r["accepted"], "nodes_cpu_us", r["nodes_cpu_us_per_job"], "alloc_kb_job_node", r["alloc_kb_per_job_node"], "p99", r["p99_ms"])
PY
  done
done
