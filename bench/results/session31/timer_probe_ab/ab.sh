#!/bin/bash
# Probe: what do the per-request body-read timer and the per-delivery timeout timers cost a node?
# /tmp/head is this session's tree; /tmp/notim the same with those timers removed (a probe only,
# not a product: tools/no_request_timers.patch). Alternated `bench --rates 200 --duration 20`.
# Usage: ab.sh ROUNDS OUT (OUT absolute)
exec bash /work/main/bench/results/session31/tools/ab_worktrees.sh "$1" "$2" head notim
