#!/bin/bash
# Per-thread CPU and context switches of the five nodes over 8 s of a 200/s step.
cd /work/main && (deno task hookd bench --rates ${1:-200} --duration 20 --json > /tmp/lone/t200.json 2>/dev/null &)
sleep 16
PIDS=$(pgrep -f "main.ts node --id")
snap() { for p in $PIDS; do for t in /proc/$p/task/*; do n=$(cat $t/comm | tr ' ' '_'); [ "$(basename $t)" = "$p" ] && n=MAIN; echo "$n $(awk '{print $14+$15}' $t/stat) $(grep -E '^(non)?voluntary_ctxt' $t/status | awk '{print $2}' | paste -sd' ')"; done; done; }
snap > /tmp/lone/t0; sleep 8; snap > /tmp/lone/t1
sleep 8
python3 - <<'PY'
import collections, re, json
def load(f):
    d=collections.defaultdict(lambda:[0,0,0,0])
    for l in open(f):
        n,c,v,nv=l.split(); n=re.sub(r"\d+$","",n); x=d[n]; x[0]+=int(c); x[1]+=int(v); x[2]+=int(nv); x[3]+=1
    return d
a,b=load('/tmp/lone/t0'),load('/tmp/lone/t1')
rate=json.load(open('/tmp/lone/t200.json'))[0]['rate']
jobs=rate*8
for k in sorted(b):
    if k not in a: print(f"  {k:18s} (new threads: {b[k][3]})"); continue
    print(f"  {k:18s} threads {b[k][3]:2d}  CPU {(b[k][0]-a[k][0])*10/jobs*1000:7.0f} µs/job  vol {(b[k][1]-a[k][1])/jobs:6.2f}/job  invol {(b[k][2]-a[k][2])/jobs:6.2f}/job")
PY
