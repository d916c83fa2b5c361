# Slow fsyncs (the slow_fsync.patch diagnostic's stderr lines) beside the latency TSV: per bin
# of the step, the slowest job (sent -> received) and every fsync over 10 ms that started in it
# (node:ms, i = inline on the event loop, p = in Deno's blocking pool).
import re,sys,collections
err,lat=sys.argv[1],sys.argv[2]; B=int(sys.argv[3]) if len(sys.argv)>3 else 250
fs=[]
for line in open(err):
    m=re.search(r'\[(n\d)\] slow-fsync (\d+) ([\d.]+) (\w+)',line)
    if m: fs.append((int(m.group(2)),m.group(1),float(m.group(3)),m.group(4)))
import gzip
op=gzip.open if lat.endswith('.gz') else open
L=[l.rstrip('\n').split('\t') for l in op(lat,'rt')][1:]
rows=sorted((float(r[4]),float(r[6]) if r[6] else None,float(r[7]),r[8]) for r in L)
t0=rows[0][0]; t1=rows[-1][0]
step=[f for f in fs if t0<=f[0]<=t1+200]
print('fsyncs over 5 ms during the step:',len(step),'by where', dict(collections.Counter(f[3] for f in step)))
d=sorted(f[2] for f in step); print('their ms: p50 %.1f p90 %.1f max %.1f'%(d[len(d)//2],d[int(len(d)*.9)],d[-1]))
bins=collections.defaultdict(list); fb=collections.defaultdict(list)
for sc,rc,s,n in rows:
    if rc: bins[int((s-t0)//B)].append(rc-s)
for t,n,ms,k in step:
    if ms>10: fb[int((t-t0)//B)].append(f'{n}:{ms:.0f}{k[0]}')
for b in sorted(bins):
    mx=max(bins[b])
    if mx>25 or fb[b]: print(f'{b*B/1000:6.2f}s slowest {mx:6.1f} ms  fsyncs over 10 ms: {" ".join(fb[b])}')
