#!/bin/bash
# Fresh-cluster A/B of the flag: --rates 200 --duration 20, before (5229080) / after (3919ff5), alternated.
# The committed copies in fresh200/ rename each .json to .out (it holds the bench process's own GC
# lines before its JSON) and gzip the .err files.
for i in 1 2 3; do
  for arm in before after; do
    wt=/tmp/before; [ $arm = after ] && wt=/work/main
    cd $wt  # /tmp/before: a worktree at 5229080
    bash /work/main/bench/results/session31/tools/hostspeed.sh > /tmp/s35/ab.$arm.$i.host
    DENO_V8_FLAGS=--trace-gc timeout 600 deno task hookd bench --rates 200 --duration 20 --json > /tmp/s35/ab.$arm.$i.json 2> /tmp/s35/ab.$arm.$i.err
    echo "$arm.$i rc=$?" >> /tmp/s35/ab.done
  done
done
