#!/bin/bash
# Issue 19's commands, one run each, in this order, nothing else running. Usage: run.sh TAG
set -u
tag=$1; out=$(dirname "$0")
bash bench/results/session31/tools/hostspeed.sh > "$out/host_before_$tag.txt" 2>&1
deno task hookd bench --rates 200,400,800,1600,3200,6400 --duration 20 --json > "$out/rates_$tag.json" 2> "$out/rates_$tag.err"
deno task hookd bench --loss 0,0.1,0.2 --rate 200 --duration 20 --json > "$out/loss_$tag.json" 2> "$out/loss_$tag.err"
deno task hookd bench --rates 10 --duration 10 --json > "$out/lone_$tag.json" 2> "$out/lone_$tag.err"
deno task hookd bench replication --rate 1000 --seconds 5 --json > "$out/repl_$tag.json" 2> "$out/repl_$tag.err"
deno task hookd bench cost --rates 200,1600 --duration 10 --warmup 10 --idle 20 --idle-settle 30 --floor-ops 2000 --no-profile > "$out/cost_$tag.txt" 2>&1
bash bench/results/session31/tools/hostspeed.sh > "$out/host_after_$tag.txt" 2>&1
