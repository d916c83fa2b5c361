import json,sys,collections,glob
name=sys.argv[2]; depth=int(sys.argv[3]) if len(sys.argv)>3 else 4
agg=collections.Counter(); tot=0
for f in glob.glob(sys.argv[1]):
    p=json.load(open(f))
    nodes={n['id']:n for n in p['nodes']}
    parent={}
    for n in p['nodes']:
        for c in n.get('children',[]): parent[c]=n['id']
    dt=collections.defaultdict(float)
    for s,d in zip(p['samples'],p['timeDeltas']): dt[s]+=d
    for nid,t in dt.items():
        # inclusive: any ancestor (or self) named name
        a=nid; 
        while a is not None:
            cf=nodes[a]['callFrame']
            if cf['functionName']==name: break
            a=parent.get(a)
        if a is None: continue
        chain=[]; b=parent.get(a)
        while b is not None and len(chain)<depth:
            cf=nodes[b]['callFrame']; chain.append((cf['functionName'] or '(anon)')+'@'+cf['url'].split('/')[-1]+':'+str(cf['lineNumber']+1)); b=parent.get(b)
        agg[' <- '.join(chain)]+=t; tot+=t
print('inclusive ms',tot/1000)
for k,v in agg.most_common(15): print('%8.1f ms %s'%(v/1000,k))
