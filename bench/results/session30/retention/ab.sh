#!/bin/bash
# How much of the nodes' GC work is the job table holding delivered jobs: the same tree with
# the default retention (1 h) and with delivered jobs kept 1 s (`finishedRetentionMs: 1_000` in
# src/config/jobs.ts of a scratch worktree), alternated, `bench --rates 1600 --duration 10`.
# Usage: ab.sh ROUNDS DEFAULT_DIR SHORT_DIR OUT
rounds=$1; base=$2; short=$3; out=$4; mkdir -p $out
for i in $(seq 1 $rounds); do
  for arm in hour second; do
    dir=$base; [ $arm = second ] && dir=$short
    (cd $dir && deno task hookd bench --rates 1600 --duration 10 --json) > $out/$arm.$i.json 2> $out/$arm.$i.err
  done
done
