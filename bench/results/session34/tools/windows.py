"""p50 / p99 / worst latency (scheduled to received at the sink) per window of one step of a
`hookd bench --latencies-out` TSV: `python3 windows.py FILE.tsv STEP-SUFFIX WINDOW-S`, e.g.
`python3 windows.py new.4.tsv r200 10` (columns: window start s, jobs, p50, p99, worst ms)."""
import collections, sys
path, step, win = sys.argv[1], sys.argv[2], float(sys.argv[3])
rows=[l.rstrip('\n').split('\t') for l in open(path)][1:]
rows=[r for r in rows if r[0].endswith(step)]
t0=min(float(r[4]) for r in rows)
w=collections.defaultdict(list)
for r in rows:
    if r[6]=='': continue
    w[int((float(r[4])-t0)//(win*1000))].append(float(r[6])-float(r[4]))
for k in sorted(w):
    v=sorted(w[k]); n=len(v)
    print(int(k*win), n, round(v[n//2],1), round(v[int(n*0.99)],1), round(v[-1],1))
