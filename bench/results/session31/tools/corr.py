import collections,sys
ts=sys.argv[1]; lat=sys.argv[2]; BIN=int(sys.argv[3]) if len(sys.argv)>3 else 200
rows=[l.split('\t') for l in open(ts)]
series=collections.defaultdict(list)
for r in rows: series[r[1]].append((float(r[0]),r[2],int(r[3]),int(r[4]),int(r[5])))
def kind(role):
    if role.startswith('node'): return 'node'
    if 'generator' in role: return 'gen'
    if 'sink' in role: return 'sink'
    return 'other:'+role
bins=collections.defaultdict(lambda: collections.Counter())
for pid,s in series.items():
    for a,b in zip(s,s[1:]):
        k=kind(a[1]); bn=int(b[0]//BIN)
        bins[bn][k+'.main']+=b[2]-a[2]; bins[bn][k+'.v8w']+=b[3]-a[3]; bins[bn][k+'.oth']+=b[4]-a[4]
L=[l.rstrip('\n').split('\t') for l in open(lat)][1:]
lb=collections.defaultdict(list)
for r in L:
    if r[6]: lb[int(float(r[4])//BIN)].append(float(r[6])-float(r[4]))
keys=sorted(lb)
scale=1000/BIN/100  # ticks(10ms) per bin -> cores
print('t_s  maxlat  n  | node.main node.v8w gen sink other')
t0=keys[0]
for k in keys:
    c=bins[k]; v=lb[k]
    other=sum(x for kk,x in c.items() if kk.startswith('other'))
    print(f"{(k-t0)*BIN/1000:5.1f} {max(v):6.1f} {len(v):3d} | {c['node.main']*scale:5.2f} {c['node.v8w']*scale:5.2f} {(c['gen.main']+c['gen.v8w']+c['gen.oth'])*scale:5.2f} {(c['sink.main']+c['sink.v8w']+c['sink.oth'])*scale:5.2f} {other*scale:5.2f}")
