#!/usr/bin/env bash
# Alternates hookd and the skeleton cluster on the same steps; one JSON file per run.
# Usage: ab.sh ROUNDS OUTDIR NAME -- sweep args…
set -u
rounds=$1; out=$2; name=$3; shift 4
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for kind in hookd skeleton; do
    extra=(); [ "$kind" = skeleton ] && extra=(--skeleton)
    echo "== round $r $kind $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    deno task hookd bench "$@" "${extra[@]}" --json 2>"$out/$name.$kind.$r.log" | tail -1 > "$out/$name.$kind.$r.json"
  done
done
