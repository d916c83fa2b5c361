#!/bin/bash
# Session 35's real-process runs (aged/), in the order made. Tree: 5229080 in a worktree
# (/tmp/gcw) with session 32's probe patch (bench/results/session32/tools/probe.patch: the
# NODE_V8_EXTRA environment variable adds V8 flags to the nodes only). Output in /tmp/s35; the
# committed copies gzip the .err files and leave out the TSVs.
#
# tg = V8's default (the product before this session's change) with --trace-gc;
# nomr = the same with --no-memory-reducer added, which is what the change makes the default.
# An earlier pair the same way (same session, on an earlier machine) was lost with its /tmp;
# its figures are quoted in the README from the session's notes, not from committed files.
cd /tmp/gcw
for i in 1 2; do
  for v in tg nomr; do
    extra=--trace-gc; [ $v = nomr ] && extra=--trace-gc,--no-memory-reducer
    bash /work/main/bench/results/session31/tools/hostspeed.sh > /tmp/s35/$v.$i.host
    date -u +%FT%TZ >> /tmp/s35/$v.$i.host
    NODE_V8_EXTRA=$extra deno task hookd bench --rates 400,200 --duration 300 --json \
      --latencies-out /tmp/s35/$v.$i.tsv > /tmp/s35/$v.$i.json 2> /tmp/s35/$v.$i.err
    echo "$v.$i rc=$?" >> /tmp/s35/done
  done
done
# Tables: python3 bench/results/session35/tools/gc_steps.py aged/X.err.gz 100  (gc_steps.txt)
#         python3 bench/results/session35/tools/rows.py aged/*.json           (rows.txt)
