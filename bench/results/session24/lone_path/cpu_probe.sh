#!/bin/bash
# usage: cpu_probe2.sh TREE [ENV...] — per-thread CPU and switches: 20 s idle, then 40 lone jobs 500 ms apart
tree=$1; shift
cd $tree && (env "$@" deno task hookd cluster --sink --quiet > /tmp/lone/cluster.out 2>/tmp/lone/cluster.err &)
sleep 20
read API SINK SEC <<< "$(grep -o '"n1":"[^"]*"' /tmp/lone/cluster.out | head -1 | cut -d'"' -f4) $(grep -o '"sink":"[^"]*"' /tmp/lone/cluster.out | cut -d'"' -f4) $(grep -o 'whsec_[A-Za-z0-9+/=]*' /tmp/lone/cluster.out | head -1)"
PIDS=$(pgrep -f "main.ts node --id")
snap() { for p in $PIDS; do for t in /proc/$p/task/*; do n=$(cat $t/comm | tr ' ' '_'); [ "$(basename $t)" = "$p" ] && n=MAIN; echo "$n $(awk '{print $14+$15}' $t/stat) $(grep -E '^(non)?voluntary_ctxt' $t/status | awk '{print $2}' | paste -sd' ')"; done; done; }
snap > /tmp/lone/s0; sleep 20; snap > /tmp/lone/s1
t1=$(date +%s.%N)
cd /tmp/lone && GAP=500 deno run -A probe.ts $API $SINK 40 $SEC > /tmp/lone/probe_out.txt
t2=$(date +%s.%N)
snap > /tmp/lone/s2
pkill -f "main.ts cluster"; sleep 2
python3 - "$t1" "$t2" <<'PY'
import sys, collections, re
span=float(sys.argv[2])-float(sys.argv[1])
def load(f):
    d=collections.defaultdict(lambda:[0,0,0])
    for l in open(f):
        name,cpu,v,nv=l.split()
        name=re.sub(r"\d+$","",name)
        x=d[name]; x[0]+=int(cpu); x[1]+=int(v); x[2]+=int(nv)
    return d
s0,s1,s2=load('/tmp/lone/s0'),load('/tmp/lone/s1'),load('/tmp/lone/s2')
print(f"per lone job (40 jobs over {span:.1f} s, idle rate subtracted), five nodes summed:")
tc=tv=0
for k in sorted(s2):
    idle=[(s1[k][i]-s0[k][i])/20.0 for i in range(3)]
    job=[(s2[k][i]-s1[k][i]-idle[i]*span)/40 for i in range(3)]
    tc+=job[0]*10; tv+=job[1]
    print(f"  {k:20s} CPU {job[0]*10:6.2f} ms  vol {job[1]:5.1f}  invol {job[2]:5.1f}   (idle/s: CPU {idle[0]*10:5.1f} ms vol {idle[1]:5.1f})")
print(f"  total CPU {tc:.2f} ms, voluntary switches {tv:.1f}")
lat=sorted(float(re.search(r' ([\d.]+)ms',l).group(1)) for l in open('/tmp/lone/probe_out.txt'))
print(f"  202 p50 {lat[20]:.2f} ms")
PY
