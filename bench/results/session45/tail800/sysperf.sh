#!/bin/bash
# perf record -a (every CPU, no call graphs: only the symbol a sample lands in) over 8 s of the
# measured step of `bench --rates RATE --duration 20`, started once the step begins. With `sym`,
# V8's --perf-basic-prof on every node (DENO_V8_FLAGS) so perf can name JIT code from
# /tmp/perf-PID.map, and the main threads' symbols listed too.
# Usage: sysperf.sh RATE OUTDIR [sym]
set -u
rate=$1; out=$2; sym=${3:-}; mkdir -p "$out"
if [ "$sym" = sym ]; then rm -f /tmp/perf-*.map; export DENO_V8_FLAGS=--perf-basic-prof; fi
deno task hookd bench --rates "$rate" --duration 20 --json > "$out/sweep.json" 2> "$out/sweep.err" &
bench=$!
for _ in $(seq 1 600); do
  grep -q "step 1/1" "$out/sweep.err" 2>/dev/null && break
  sleep 0.1
done
sleep 4
perf record -a -F 999 -o "$out/perf.data" -- sleep 8 2> "$out/perf_record.err"
wait $bench
perf report -i "$out/perf.data" --sort comm,dso --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" | head -40 > "$out/by_comm_dso.txt"
perf report -i "$out/perf.data" --sort sym --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" | head -80 > "$out/by_sym.txt"
if [ "$sym" = sym ]; then
  perf report -i "$out/perf.data" --comm deno --sort sym --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" | head -150 > "$out/by_sym_main.txt"
fi
