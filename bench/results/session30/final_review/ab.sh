#!/bin/bash
# The short sweep on the tree before this change (1789d77) and after it, alternated.
# Usage: ab.sh ROUNDS BEFORE_DIR AFTER_DIR OUT
rounds=$1; before=$2; after=$3; out=$4; mkdir -p $out
for i in $(seq ${START:-1} $rounds); do
  for arm in before after; do
    dir=$before; [ $arm = after ] && dir=$after
    (cd $dir && deno task hookd bench --rates 200,1600,3200 --duration 10 --json) > $out/$arm.$i.json 2> $out/$arm.$i.err
  done
done
