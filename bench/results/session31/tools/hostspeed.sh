#!/bin/bash
# Host speed probe: ms for a fixed single-thread CPU loop (lower is faster), and steal % over 2 s
python3 -c "
import time
t=time.perf_counter(); s=0
for i in range(5_000_000): s+=i*i
print('loop_ms %.0f'%((time.perf_counter()-t)*1000))"
a=($(head -1 /proc/stat)); sleep 2; b=($(head -1 /proc/stat))
tot=0; for i in 1 2 3 4 5 6 7 8; do tot=$((tot + ${b[$i]} - ${a[$i]})); done
echo "steal_pct $(( 100 * (${b[8]} - ${a[8]}) / (tot>0?tot:1) ))"
