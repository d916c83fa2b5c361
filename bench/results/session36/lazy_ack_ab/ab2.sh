#!/bin/bash
# usage: ab2.sh OUTDIR ROUNDS RATE [extra bench args]: alternates /tmp/s36/wt (base) and /tmp/s36/new
out=$1; rounds=$2; rate=$3; shift 3; mkdir -p $out
unset PROBE_ACKDELAY PROBE_UNRELIABLE_ACK
for r in $(seq 1 $rounds); do
  for arm in base new; do
    dir=/tmp/s36/wt; [ $arm = new ] && dir=/tmp/s36/new
    (cd $dir && DUMP_DELTAS=1 deno task hookd bench replication --seconds ${SECS:-5} --rate $rate --json "$@" > $out/$arm.$r.json 2>$out/$arm.$r.err)
    cp /tmp/s36/deltas_fixed.txt $out/$arm.$r.deltas
  done
done
