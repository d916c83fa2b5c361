import json,sys,collections
lo,hi=float(sys.argv[1])*1e6,float(sys.argv[2])*1e6
for f in sys.argv[3:]:
    p=json.load(open(f))
    byid={n['id']:n for n in p['nodes']}
    par={}
    for n in p['nodes']:
        for c in n.get('children',[]): par[c]=n['id']
    t=p['startTime']; c=collections.Counter(); tot=0
    for s,d in zip(p['samples'],p['timeDeltas']):
        t+=d
        if not (lo <= t-p['startTime'] < hi): continue
        cf=byid[s]['callFrame']
        if cf['functionName'] in ('(idle)',): continue
        chain=[];at=s
        while at is not None and len(chain)<5:
            x=byid[at]['callFrame']; chain.append(f"{x['functionName'] or '(anon)'}@{x['url'].split('/')[-1]}"); at=par.get(at)
        c[' < '.join(chain)]+=d; tot+=d
    print('==',f.split('/')[-1], 'busy ms', tot/1000)
    for k,v in c.most_common(8): print(f"  {v/1000:6.1f} {k}")
