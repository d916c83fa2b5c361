# Each node's --trace-gc-nvp events (sweep stderr, plain or .gz, with the time-origin lines of
# tools/probe.patch) put on a --latencies-out TSV's clock: how many slow jobs overlap a GC, and
# the bursts of slow jobs with the GCs near them. Usage: python3 gccorr.py ERR TSV
import re,json,sys,collections,gzip
err,lat=sys.argv[1],sys.argv[2]
origin={}
gcs=[]  # (node, start_epoch, end_epoch, kind, pause)
lines=(gzip.open if err.endswith('.gz') else open)(err,'rt',errors='replace').read().splitlines()
for line in lines:
    m=re.search(r'\[(n\d)\] time-origin (\d+) ([\d.]+)',line)
    if m: origin[m.group(1)]=float(m.group(3))
for line in lines:
    m=re.search(r'\[(n\d)\] \[\d+:0x\w+:0\]\s+(\d+) ms: GC: (\{.*\})\s*$',line) or re.search(r'\[(n\d)\] \[\d+:0x\w+:0\]\s+(\d+) ms: (.*)$',line)
    if not m: continue
    try: d=json.loads(m.group(3))
    except: continue
    n=m.group(1); t=origin[n]+int(m.group(2))
    # nvp prints at end of GC; pause in ms
    gcs.append((n,t-d['pause'],t,d['gc'],d['pause']))
L=[l.rstrip('\n').split('\t') for l in open(lat)][1:]
jobs=[(float(r[4]),float(r[7]),float(r[6]),r[8]) for r in L if r[6]]
kinds=collections.Counter(g[3] for g in gcs); print('gc kinds',kinds)
big=[g for g in gcs if g[3]!='s']; print('non-scavenge',[(g[0],round(g[4],1)) for g in big])
def overlaps(j,filt):
    s,e=j[1],j[2]
    return [g for g in gcs if filt(g) and g[1]<e and g[2]>s]
for thr in (15,30):
    slow=[j for j in jobs if j[2]-j[0]>thr]; fast=[j for j in jobs if j[2]-j[0]<=6]
    for name,filt in (('any',lambda g:True),('scav>=5ms',lambda g:g[3]=='s' and g[4]>=5),('nonscav',lambda g:g[3]!='s')):
        fs=sum(1 for j in slow if overlaps(j,filt))/max(1,len(slow)); ff=sum(1 for j in fast if overlaps(j,filt))/max(1,len(fast))
        print(f'thr {thr}: slow {len(slow)} overlap {name} {fs:.2f}  | fast {len(fast)} {ff:.2f}')
# clusters of slow jobs: group by received time gaps
slow=sorted([j for j in jobs if j[2]-j[0]>15],key=lambda j:j[0])
clusters=[]
for j in slow:
    if clusters and j[0]-clusters[-1][-1][0]<300: clusters[-1].append(j)
    else: clusters.append([j])
t0=min(j[0] for j in jobs)
for c in clusters:
    s=min(j[1] for j in c); e=max(j[2] for j in c)
    ov=[g for g in gcs if g[1]<e and g[2]>s-50]
    print(f'burst at {(c[0][0]-t0)/1000:7.2f}s n={len(c):3d} worst {max(j[2]-j[0] for j in c):6.1f} ms; gcs near: '+', '.join(f'{g[0]}:{g[3]}:{g[4]:.0f}@{(g[1]-t0)/1000:.2f}' for g in ov[:8]))
