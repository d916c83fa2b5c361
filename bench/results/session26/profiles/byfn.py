import json,sys,collections
tot=collections.Counter(); total=0
pat=sys.argv[1]
for f in sys.argv[2:]:
    p=json.load(open(f))
    byid={n['id']:n for n in p['nodes']}
    for s,d in zip(p['samples'],p['timeDeltas']):
        cf=byid[s]['callFrame']
        u=cf['url']
        if pat not in u: continue
        k=(cf['functionName'] or '(anon)')+' '+u.split('/src/')[-1]+':'+str(cf['lineNumber']+1)
        tot[k]+=max(d,0); total+=max(d,0)
print('total ms',total/1000)
for k,v in tot.most_common(int(__import__('os').environ.get('N','40'))): print(f"{v/1000:9.1f} ms {100*v/total:5.1f}% {k}")
