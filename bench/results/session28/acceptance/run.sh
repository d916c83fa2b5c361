#!/bin/bash
# The acceptance commands, once each, on 624b0e6, one after another (output beside this file).
cd /work/main
out=bench/results/session28/acceptance
deno run -A main.ts bench --rates 200,400,800,1600,3200,6400 --duration 20 --out $out/rate --json > $out/rate.out 2> $out/rate.err
deno run -A main.ts bench --loss 0,0.1,0.2 --rate 200 --duration 20 --out $out/loss --json > $out/loss.out 2> $out/loss.err
deno run -A main.ts bench --rates 10 --duration 10 --warmup 2 --json > $out/lone.out 2> $out/lone.err
deno run -A main.ts bench replication --seconds 5 --json > $out/replication.out 2> $out/replication.err
