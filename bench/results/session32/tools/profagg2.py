import json,sys,collections,glob
byfn=collections.Counter(); tot=0; under=collections.Counter()
target=sys.argv[2] if len(sys.argv)>2 else 'ext:deno_net/'
for f in glob.glob(sys.argv[1]):
    p=json.load(open(f))
    nodes={n['id']:n for n in p['nodes']}
    parent={}
    for n in p['nodes']:
        for c in n.get('children',[]): parent[c]=n['id']
    dt=collections.defaultdict(float)
    for s,d in zip(p['samples'],p['timeDeltas']): dt[s]+=d
    for nid,t in dt.items():
        cf=nodes[nid]['callFrame']
        if cf['functionName'] in ('(idle)',): continue
        tot+=t
        url=cf['url'].split('/')[-1] if cf['url'] else '(native)'
        byfn[(cf['functionName'] or '(anon)')+' '+url+':'+str(cf['lineNumber']+1)]+=t
        # find nearest ancestor frame in target
        a=nid; chain=[]
        while a is not None:
            c=nodes[a]['callFrame']
            if target in c['url']:
                # record which self function under which target fn
                under[(c['functionName'] or '(anon)')+' | self='+(cf['functionName'] or '(anon)')]+=t
                break
            a=parent.get(a)
print('total ms',tot/1000)
for k,v in byfn.most_common(int(sys.argv[3]) if len(sys.argv)>3 else 40): print('%6.2f%% %s'%(100*v/tot,k))
print('--- under',target)
for k,v in under.most_common(25): print('%6.2f%% %s'%(100*v/tot,k))
