import re,json,sys
for f in sys.argv[1:]:
    rows=[]
    for line in open(f,errors='replace'):
        m=re.search(r'\[(n\d)\] \[\d+:0x\w+:0\]\s+(\d+) ms: GC: (\{.*\})\s*$',line)
        if m:
            try: d=json.loads(m.group(3))
            except: continue
            d['t']=int(m.group(2)); rows.append(d)
    s=sorted(r['pause'] for r in rows if r['gc']=='s' and r['t']>9000)
    mc=[r['pause'] for r in rows if r['gc']!='s' and r['t']>9000]
    j=json.load(open(f.replace('.err','.json')))[0]
    print(f"{f.split('/')[-1]:40s} scav n {len(s)} p50 {s[len(s)//2]:.1f} p90 {s[int(len(s)*.9)]:.1f} max {s[-1]:.1f} sum {sum(s):.0f} | other {len(mc)} {[round(x,1) for x in mc]} | p50 {j['p50_ms']} p99 {j['p99_ms']} cpu {j['cpu_ms_per_job']} thr {j['node_cpu_cores_by_thread']}")
