#!/bin/bash
# Alternates V8 GC flags on `bench replication` (DENO_V8_FLAGS reaches the bench, the generator
# and the nodes, on top of the task's --min-semi-space-size=16). Run from the tree to measure.
# Usage: ab.sh ROUNDS OUTDIR
rounds=$1; out=$2; mkdir -p $out
for i in $(seq 1 $rounds); do
  for arm in default stgc nopscav; do
    case $arm in
      default) flags="";;
      stgc) flags="--single-threaded-gc";;
      nopscav) flags="--no-parallel-scavenge";;
    esac
    # An empty DENO_V8_FLAGS is refused by V8: the default arm leaves it unset.
    if [ -n "$flags" ]; then export DENO_V8_FLAGS=$flags; else unset DENO_V8_FLAGS; fi
    deno task hookd bench replication --seconds 5 --json > $out/$arm.$i.json 2> $out/$arm.$i.err
    echo "$arm $i rc=$?" >> $out/progress
  done
done
