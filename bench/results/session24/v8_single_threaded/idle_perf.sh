#!/bin/bash
# usage: idle_perf.sh LABEL [ENV...] — five idle nodes of `hookd cluster --sink`, 40 s after start,
# perf stat task-clock + context switches over 30 s, and per-thread /proc CPU over the same window.
label=$1; shift
cd /work/main && (env "$@" deno task hookd cluster --sink --quiet > /tmp/lone/cluster_idle.out 2>/tmp/lone/cluster_idle.err &)
sleep 40
PIDS=$(pgrep -f "main.ts node --id" | paste -sd,)
snap() { for p in ${PIDS//,/ }; do for t in /proc/$p/task/*; do n=$(cat $t/comm | tr ' ' '_'); [ "$(basename $t)" = "$p" ] && n=MAIN; echo "$n $(awk '{print $14+$15}' $t/stat) $(grep -E '^voluntary_ctxt' $t/status | awk '{print $2}')"; done; done; }
snap > /tmp/lone/i0
perf stat -x, -e task-clock,context-switches -p $PIDS -- sleep 30 2> /tmp/lone/perf_idle.txt
snap > /tmp/lone/i1
pkill -f "main.ts cluster"; sleep 3
python3 - "$label" <<'PY'
import sys, collections, re
def load(f):
    d=collections.defaultdict(lambda:[0,0])
    for l in open(f):
        n,c,v=l.split(); n=re.sub(r"\d+$","",n); d[n][0]+=int(c); d[n][1]+=int(v)
    return d
a,b=load('/tmp/lone/i0'),load('/tmp/lone/i1')
perf={}
for l in open('/tmp/lone/perf_idle.txt'):
    p=l.strip().split(',')
    if len(p)>3 and p[0] not in ('',): perf[p[2]]=float(p[0])
tc=perf.get('task-clock',0)/30/5/10  # ms over 30 s -> % of a core per node
cs=perf.get('context-switches',0)/30/5
threads=' '.join(f"{k}: {(b[k][0]-a[k][0])*10/30/5:.2f} ms/s {(b[k][1]-a[k][1])/30/5:.1f} wakes/s" for k in sorted(b) if k in a)
print(f"{sys.argv[1]:24s} perf: {tc:.3f} % of a core per node, {cs:.1f} switches/s per node | /proc per node: {threads}")
PY
