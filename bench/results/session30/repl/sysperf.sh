#!/bin/bash
# System-wide perf (cpu-clock, call graphs) over 6 s of `bench replication`'s maximum-rate phase.
# Usage: sysperf.sh OUT_PREFIX   (run from the tree to measure)
out=$1
deno task hookd bench replication --seconds 10 --json > $out.json 2> $out.err &
bench=$!
for i in $(seq 1 600); do grep -q "max rate: 10 s" $out.err 2>/dev/null && break; sleep 0.1; done
sleep 1
perf record -a -g -e cpu-clock -F 999 -o $out.perf.data -- sleep 6 2> $out.perf.err
wait $bench
perf report -i $out.perf.data --no-children --sort comm,dso -g none --stdio 2>/dev/null | head -60 > $out.dso.txt
