import json,sys,collections,re
s=json.load(open(sys.argv[1])); N=int(sys.argv[2])
meta=s['snapshot']['meta']; nf=meta['node_fields']; types=meta['node_types'][0]
strings=s['strings']; nodes=s['nodes']; n=len(nf)
ti=nf.index('type'); ni=nf.index('name'); si=nf.index('self_size')
c=collections.Counter(); cnt=collections.Counter()
for i in range(0,len(nodes),n):
    t=types[nodes[i+ti]]
    if t in ('string','concatenated string','sliced string','number'):
        name=strings[nodes[i+ni]]
        key=t+' '+re.sub(r'[0-9a-f]{6,}','H',name)[:50]
        c[key]+=nodes[i+si]; cnt[key]+=1
for k,v in sorted(c.items(), key=lambda x:-x[1])[:15]:
    print(f'{v/N:8.1f} B/job {cnt[k]/N:6.2f}/job  avg {v/cnt[k]:6.1f}  {k}')
