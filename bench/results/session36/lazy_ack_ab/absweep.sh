#!/bin/bash
# usage: absweep.sh OUTDIR ROUNDS [bench args...]: alternates /tmp/s36/wt (base) and /tmp/s36/new
out=$1; rounds=$2; shift 2; mkdir -p $out
for r in $(seq 1 $rounds); do
  for arm in base new; do
    dir=/tmp/s36/wt; [ $arm = new ] && dir=/tmp/s36/new
    (cd $dir && deno task hookd bench "$@" --json > $out/$arm.$r.json 2>$out/$arm.$r.err)
  done
done
