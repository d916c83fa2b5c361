import json,sys,glob,re
for f in sorted(glob.glob(sys.argv[1]+'/*.json')):
    d=json.load(open(f)); fx=d['fixed_rate']; m=d['max_rate']
    dl={}
    for line in open(f[:-5]+'.deltas'):
        p=line.split()
        if len(p)==3: dl[p[1]]=float(p[2])
    n=fx['acknowledged'] or 1
    ack=sum(v for k,v in dl.items() if 'ack_only' in k)/n
    rtx=sum(v for k,v in dl.items() if 'retransmits' in k)/n
    print(f.split('/')[-1].ljust(12),'fixed cpu',fx['cpu_us_per_commit_all_processes'],'p50',d['p50_ms'],'p99',d['p99_ms'],'dg %.2f'%fx['datagrams_per_commit'],'ackonly %.2f rtx %.3f'%(ack,rtx),'| max',d['commits_per_s'],m['cpu_us_per_commit_all_processes'],'lost',d['lost'],d['problems'][:2])
