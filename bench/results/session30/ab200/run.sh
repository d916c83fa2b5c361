#!/bin/bash
# alternate 200/s runs: base, head, head-nopace
cd /work/ab200
for i in 1 2 3; do
  for arm in base head headnp; do
    case $arm in
      base) dir=/tmp/base; extra="";;
      head) dir=/tmp/head; extra="";;
      headnp) dir=/tmp/headnp; extra="";;
    esac
    (cd $dir && deno task hookd bench --rates 200 --duration 20 --json $extra) > $arm.$i.json 2> $arm.$i.err
    echo "$arm $i rc=$?" >> progress
  done
done
