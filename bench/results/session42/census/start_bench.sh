#!/bin/bash
# Sourced by census.sh and cpu_split.sh: starts `hookd bench --rates $rate --duration 30` (from the
# repository's root), writing $out.json and $out.err, and returns once its recorded step has run
# 5 s, with the bench's pid in $bench and the five nodes' pids in $pids (newline-separated).
cd "$(dirname "${BASH_SOURCE[0]}")/../../../.."
deno task hookd bench --rates "$rate" --duration 30 --json > "$out.json" 2> "$out.err" &
bench=$!
for _ in $(seq 1 240); do
  grep -q "step 1/1" "$out.err" 2>/dev/null && break
  sleep 0.5
done
sleep 5
pids=$(pgrep -f "main.ts node --id n")
