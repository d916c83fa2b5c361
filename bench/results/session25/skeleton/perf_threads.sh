#!/usr/bin/env bash
# perf's exact task clock and context switches per thread of the five nodes over 8 s of a
# 200 jobs/s step, hookd then the skeleton, ROUNDS times. Usage: perf_threads.sh ROUNDS
set -u
for r in $(seq 1 "$1"); do
  for kind in hookd skeleton; do
    extra=(); pat="main.ts node --id"
    [ "$kind" = skeleton ] && { extra=(--skeleton); pat="skeleton-node --index"; }
    deno task hookd bench --rates 200 --duration 20 "${extra[@]}" --json > "threads.$kind.$r.json" 2>/dev/null &
    bench=$!
    sleep 16
    pids=$(pgrep -f "$pat" | paste -sd,)
    perf stat --per-thread -x, -e task-clock,context-switches -p "$pids" -- sleep 8 2> "threads.$kind.$r.perf"
    wait $bench
  done
done
