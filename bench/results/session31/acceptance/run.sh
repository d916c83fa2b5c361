#!/bin/bash
# Issue 19's sweeps on this session's tree (30-s warm-up by default), one run each, from the
# tree's root. Usage: run.sh OUT
out=$1; mkdir -p $out
bash bench/results/session31/tools/hostspeed.sh > $out/host_before.txt 2>&1
deno task hookd bench --rates 200,400,800,1600,3200,6400 --duration 20 --json > $out/rates.json 2> $out/rates.err
deno task hookd bench --loss 0,0.1,0.2 --rate 200 --duration 20 --json > $out/loss.json 2> $out/loss.err
deno task hookd bench --rates 10 --duration 10 --json > $out/lone.json 2> $out/lone.err
bash bench/results/session31/tools/hostspeed.sh > $out/host_after.txt 2>&1
