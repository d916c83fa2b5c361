import json,sys,collections
tot=collections.Counter(); total=0
skip={'(idle)','op_fs_file_sync_data_sync','post'}
for f in sys.argv[1:]:
    p=json.load(open(f))
    byid={n['id']:n for n in p['nodes']}
    for s,d in zip(p['samples'],p['timeDeltas']):
        cf=byid[s]['callFrame']
        fn=cf['functionName']; u=cf['url']
        if fn in skip: continue
        if fn.startswith('op_'): k='op:'+fn
        elif fn.startswith('('): k=fn
        elif '/src/' in u: k='src/'+u.split('/src/')[1].split('/')[0]
        elif u.startswith('ext:') or 'node:' in u: k='runtime-js'
        else: k='other:'+u[:40]
        tot[k]+=max(d,0); total+=max(d,0)
print('total ms',total/1000)
for k,v in tot.most_common(40): print(f"{v/1000:9.1f} ms {100*v/total:5.1f}% {k}")
