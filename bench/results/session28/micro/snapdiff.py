import json,sys,collections
def agg(path):
    s=json.load(open(path))
    meta=s['snapshot']['meta']; nf=meta['node_fields']; types=meta['node_types'][0]
    strings=s['strings']; nodes=s['nodes']; n=len(nf)
    ti=nf.index('type'); ni=nf.index('name'); si=nf.index('self_size')
    c=collections.Counter(); cnt=collections.Counter()
    for i in range(0,len(nodes),n):
        t=types[nodes[i+ti]]; name=strings[nodes[i+ni]]
        if t in ('string','concatenated string','sliced string'): name='(string)'
        if t=='number': name='(heap number)'
        if t=='array': name='(array) '+name[:40]
        if t=='code' or t=='hidden': name='('+t+') '+name[:30]
        key=t+' '+name[:60]
        c[key]+=nodes[i+si]; cnt[key]+=1
    return c,cnt
a,ac=agg(sys.argv[1]); b,bc=agg(sys.argv[2]); N=int(sys.argv[3])
d=[(k,b[k]-a[k],bc[k]-ac[k]) for k in set(a)|set(b)]
d.sort(key=lambda x:-x[1])
tot=sum(x[1] for x in d)
print('total per job', tot/N)
for k,v,cn in d[:30]: print(f'{v/N:8.1f} B/job {cn/N:6.2f} obj/job  {k}')
