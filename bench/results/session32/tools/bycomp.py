import json,sys,collections,glob
# self time of JS frames whose url contains sys.argv[2], plus native children attributed to nearest such ancestor
pat=sys.argv[2]
agg=collections.Counter(); tot=0
for f in glob.glob(sys.argv[1]):
    p=json.load(open(f)); nodes={n['id']:n for n in p['nodes']}
    parent={}
    for n in p['nodes']:
        for c in n.get('children',[]): parent[c]=n['id']
    dt=collections.defaultdict(float)
    for s,d in zip(p['samples'],p['timeDeltas']): dt[s]+=d
    for nid,t in dt.items():
        cf=nodes[nid]['callFrame']
        if pat in cf['url']:
            agg[cf['functionName']+' '+cf['url'].split('/')[-1]+':'+str(cf['lineNumber']+1)]+=t; tot+=t
print('self ms in',pat,tot/1000, ' per job µs (2000 jobs)', tot/2000)
for k,v in agg.most_common(int(sys.argv[3]) if len(sys.argv)>3 else 40): print('%8.1f ms %5.1f%% %s'%(v/1000,100*v/tot,k))
