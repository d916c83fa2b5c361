#!/bin/bash
# `bench replication --seconds 5` with V8's default against --no-concurrent-recompilation
# (TurboFan compiles on the main thread), alternated. From the tree's root. Usage: ab.sh ROUNDS OUT
rounds=$1; out=$2; mkdir -p $out
for i in $(seq 1 $rounds); do
  for arm in default nocr; do
    if [ $arm = default ]; then unset DENO_V8_FLAGS; else export DENO_V8_FLAGS=--no-concurrent-recompilation; fi
    deno task hookd bench replication --seconds 5 --json > $out/$arm.$i.json 2> $out/$arm.$i.err
  done
done
unset DENO_V8_FLAGS
