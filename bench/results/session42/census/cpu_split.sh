#!/bin/bash
# User and kernel CPU of the five nodes (all threads) over WINDOW seconds of a recorded step of
# `hookd bench --rates RATE`, from /proc/PID/stat (utime, stime; clock ticks). No tracer
# attached. Usage: cpu_split.sh RATE OUT_PREFIX [WINDOW]
set -euo pipefail
rate=$1
out=$(realpath -m "$2")
window=${3:-10}
source "$(dirname "$0")/start_bench.sh"
sample() { for p in $pids; do awk '{print $14, $15}' "/proc/$p/stat"; done | awk '{u+=$1; s+=$2} END {print u, s}'; }
read -r u0 s0 < <(sample)
sleep "$window"
read -r u1 s1 < <(sample)
wait $bench
hz=$(getconf CLK_TCK)
jobs=$((rate * window))
python3 -c "
u=($u1-$u0)/$hz; s=($s1-$s0)/$hz; j=$jobs
print(f'rate $rate window ${window}s: five nodes user {u:.2f} s, kernel {s:.2f} s ({100*s/(u+s):.0f} % kernel); per job user {1e6*u/j:.0f} us, kernel {1e6*s/j:.0f} us')
" | tee "$out.txt"
