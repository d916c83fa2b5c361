#!/bin/bash
# The simulator's seeds on two trees, alternated: the same work (same traces), so the run time is
# what the cores' JavaScript costs. Usage: ab.sh ROUNDS BASE_DIR NEW_DIR OUT
rounds=$1; base=$2; new=$3; out=$4
for i in $(seq 1 $rounds); do
  for arm in base new; do
    dir=$base; [ $arm = new ] && dir=$new
    /usr/bin/time -f "%U %S %e" -o $out/$arm.$i.time bash -c "cd $dir && deno task sim --seeds 1..40 --events --json 2>/dev/null | tail -1" > $out/$arm.$i.json
  done
done
for f in $out/*.time; do echo "$(basename $f .time) user+sys $(awk '{print $1+$2}' $f) s, wall $(awk '{print $3}' $f) s, real_ms $(python3 -c "import json;print(json.load(open('${f%.time}.json'))['real_ms'])")"; done
