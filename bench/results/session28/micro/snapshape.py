import json,sys,collections
s=json.load(open(sys.argv[1])); N=int(sys.argv[2])
meta=s['snapshot']['meta']; nf=meta['node_fields']; types=meta['node_types'][0]
ef=meta['edge_fields']; etypes=meta['edge_types'][0]
strings=s['strings']; nodes=s['nodes']; edges=s['edges']; n=len(nf); en=len(ef)
ti=nf.index('type'); ni=nf.index('name'); si=nf.index('self_size'); eci=nf.index('edge_count')
eti=ef.index('type'); eni=ef.index('name_or_index'); eto=ef.index('to_node')
c=collections.Counter(); cnt=collections.Counter()
e=0
for i in range(0,len(nodes),n):
    ec=nodes[i+eci]; t=types[nodes[i+ti]]; name=strings[nodes[i+ni]]
    if t=='object' and name=='Object' or t=='array':
        props=[]
        for j in range(e,e+ec*en,en):
            et=etypes[edges[j+eti]]
            if et=='property': props.append(strings[edges[j+eni]])
            elif et=='internal' and t=='array': pass
        key=t+' '+name[:30]+' {'+','.join(props[:14])+'}'
        c[key]+=nodes[i+si]; cnt[key]+=1
    e+=ec*en
for k,v in sorted(c.items(), key=lambda x:-x[1])[:25]:
    print(f'{v/N:8.1f} B/job {cnt[k]/N:6.2f}/job  avg {v/cnt[k]:6.1f}  {k}')
