#!/bin/bash
# What V8's worker threads do: each flag moves one kind of V8 background work onto the main
# thread (or turns it off); the workers' CPU that disappears with it was that work.
# `bench replication --seconds 5`, one run a flag, from the tree's root. Usage: flags.sh OUT
out=$1; mkdir -p $out
for arm in default --no-parallel-scavenge --no-concurrent-marking --no-concurrent-sweeping --no-concurrent-recompilation --single-threaded; do
  if [ $arm = default ]; then unset DENO_V8_FLAGS; else export DENO_V8_FLAGS=$arm; fi
  name=${arm#--}
  deno task hookd bench replication --seconds 5 --json > $out/$name.json 2> $out/$name.err
done
