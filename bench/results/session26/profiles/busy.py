import json,sys,collections
# busiest windows per node profile, with top self functions inside
W=float(sys.argv[1])*1000  # window us
for f in sys.argv[2:]:
    p=json.load(open(f))
    byid={n['id']:n for n in p['nodes']}
    t=p['startTime']; buckets=collections.defaultdict(collections.Counter)
    for s,d in zip(p['samples'],p['timeDeltas']):
        t+=d
        cf=byid[s]['callFrame']
        if cf['functionName'] in ('(idle)','op_fs_file_sync_data_sync') or 'inspector' in cf['url']: continue
        b=int((t-p['startTime'])//W)
        buckets[b][(cf['functionName'] or '(anon)')+' '+cf['url'].split('/')[-1]+':'+str(cf['lineNumber']+1)]+=d
    tot=sorted(((sum(c.values()),b) for b,c in buckets.items()),reverse=True)
    print('==',f.split('/')[-1],'median window busy ms',sorted(x for x,_ in tot)[len(tot)//2]/1000)
    for busy,b in tot[:3]:
        print(f'  window at {b*W/1e6:6.2f}s busy {busy/1000:6.1f} ms:', '; '.join(f'{k} {v/1000:.1f}' for k,v in buckets[b].most_common(6)))
