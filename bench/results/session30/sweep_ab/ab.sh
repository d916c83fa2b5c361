#!/bin/bash
# The short rate sweep on two trees, alternated. Usage: ab.sh ROUNDS BASE_DIR NEW_DIR OUT
rounds=$1; base=$2; new=$3; out=$4; mkdir -p $out
for i in $(seq 1 $rounds); do
  for arm in base new; do
    dir=$base; [ $arm = new ] && dir=$new
    (cd $dir && deno task hookd bench --rates 200,1600,3200 --duration 10 --json) > $out/$arm.$i.json 2> $out/$arm.$i.err
    echo "$arm $i rc=$?" >> $out/progress
  done
done
