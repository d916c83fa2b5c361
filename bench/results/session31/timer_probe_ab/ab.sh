#!/bin/bash
# Probe: what do the per-request body-read timer and the per-delivery timeout timers cost a node?
# /tmp/head is this session's tree; /tmp/notim the same with those timers removed (a probe only,
# not a product: tools/no_request_timers.patch). Alternated `bench --rates 200 --duration 20`.
# Usage: ab.sh ROUNDS OUT (OUT absolute)
rounds=$1; out=$2; mkdir -p $out
for r in $(seq 1 $rounds); do
  for arm in head notim; do
    (cd /tmp/$arm && bash /work/main/bench/results/session31/tools/hostspeed.sh > $out/${arm}_$r.host 2>&1 &&
      deno task hookd bench --rates 200 --duration 20 --json > $out/${arm}_$r.json 2> $out/${arm}_$r.err)
  done
done
