#!/bin/bash
# Syscalls a job costs on the nodes at one rate: `hookd bench --rates RATE` runs as usual, and
# while its recorded step runs, perf counts every syscall tracepoint of the five node processes
# (all their threads) for WINDOW seconds, per thread. Usage: census.sh RATE OUT_PREFIX [WINDOW]
set -euo pipefail
rate=$1
out=$(realpath -m "$2")
window=${3:-10}
source "$(dirname "$0")/start_bench.sh"
pids=$(echo "$pids" | paste -sd, -)
perf stat --per-thread -x, -e 'syscalls:sys_enter_*' -p "$pids" -- sleep "$window" 2> "$out.perf.csv" || true
wait $bench
echo "rate $rate window ${window}s pids $pids" > "$out.meta"
