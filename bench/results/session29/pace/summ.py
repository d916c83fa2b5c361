import json,sys,glob
for f in sorted(glob.glob(sys.argv[1])):
    try: rows=json.load(open(f))
    except Exception: continue
    out=[]
    for r in rows:
        cpu=r.get('cpu_cores') or {}
        nodes=sum(v for k,v in cpu.items() if k.startswith('n'))
        lab = r.get('rate') if r.get('sweep')=='rate' else f"loss{r.get('loss')}"
        out.append(f"{lab}: acc {r['accepted']} p50 {r['p50_ms']} p99 {r['p99_ms']} lost {r['lost']} cpu/job {r['cpu_ms_per_job']} fs/job {r['fsyncs_per_job']} dg/job {r['datagrams_per_job']} wk/job {r['wakeups_per_job']}")
    print(f.split('/')[-1], " | ".join(out))
