#!/bin/bash
# Alternated rounds of `bench --rates 200 --duration 20` (30-s warm-up) on two worktrees of one
# commit: /tmp/base as committed, /tmp/lz with lazySendMs and lazyAppendMs 100 instead of 20.
# Usage: ab.sh ROUNDS OUT (OUT absolute)
exec bash /work/main/bench/results/session31/tools/ab_worktrees.sh "$1" "$2" base lz
