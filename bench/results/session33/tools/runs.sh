#!/bin/bash
# Every real-process run of session 33, in the order it was made. Two scratch worktrees,
# /tmp/old (90362ab) and /tmp/new (f56e009), each with session 32's tools/probe.patch applied
# plus one probe line in src/config/jobs.ts:
#   catchupLogBytesMax: Number(Deno.env.get("PROBE_CATCHUP_BYTES") ?? 64 * 1024 * 1024),
# Output goes to /tmp/s33/DIR; the committed copies gzip the .err files and leave out the TSVs.
set -u

# run DIR ARM ROUND ENV-ASSIGNMENTS BENCH-ARGS...: one `hookd bench` in ARM's worktree, the host
# loop probe first.
run() {
  local dir=$1 arm=$2 round=$3 env=$4
  shift 4
  local out=/tmp/s33/$dir/$arm.$round
  mkdir -p "/tmp/s33/$dir"
  cd "/tmp/$arm" || exit 1
  bash /work/main/bench/results/session31/tools/hostspeed.sh > "$out.host"
  env $env deno task hookd bench "$@" --json --latencies-out "$out.tsv" > "$out.json" 2> "$out.err"
}

nvp="NODE_V8_EXTRA=--trace-gc-nvp"
steps="--rates 200,200,200 --duration 20"

# ab/: six alternated rounds, old first in rounds 1-3, new first in rounds 4-6.
for r in 1 2 3; do for arm in old new; do run ab $arm $r "$nvp" $steps; done; done
for r in 4 5 6; do for arm in new old; do run ab $arm $r "$nvp" $steps; done; done
# long/: one 240-s step each.
for arm in old new; do run long $arm 1 "$nvp" --rates 200 --duration 240; done
# bound/: an 8-MiB catch-up log, full about 70 s in.
for r in 1 2; do for arm in old new; do
  run bound $arm $r "PROBE_CATCHUP_BYTES=8388608 $nvp" --rates 200,200,200,200 --duration 30
done; done
# im/: when V8 starts incremental marking. These two runs were made without --latencies-out
# (run() now adds it); a first attempt passed the two flags space-separated and V8 refused them.
for arm in old new; do
  run im $arm 1 "NODE_V8_EXTRA=--trace-gc-nvp,--trace-incremental-marking" $steps
done
# aged/: the 200/s step on nodes already holding ~160,000 delivered jobs (product code: old).
run aged old 1 "$nvp" --rates 1200,200 --duration 150
run aged old 2 "$nvp" --rates 800,200 --duration 200
# aged/ run 3, on 15a14b3 (the product as at the session's end, probe patch only): the table
# filled at 400/s, a rate this host carries, then 300 s at 200/s.
run aged old 3 "$nvp" --rates 400,200 --duration 300
# sweep/: the short sweep on 2bb5ccc and on b76edfd, plain `deno task hookd bench --rates
# 200,1600,3200 --duration 10 --json` in each tree (no probe patch); see sweep/README.md.
