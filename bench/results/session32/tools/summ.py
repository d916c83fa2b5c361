import json,re,sys,glob
for f in sorted(glob.glob('/tmp/s32/oldsp/*.json')):
    try: rows=json.loads(open(f).read().strip().splitlines()[-1])
    except Exception as e: print(f,'unfinished'); continue
    err=open(f.replace('.json','.err'),errors='replace').read()
    mc=len(re.findall(r'"gc":"mc"',err)); sc=len(re.findall(r'"gc":"s"',err))
    heap=[int(x) for x in re.findall(r'"end_object_size":(\d+)',err)]
    host=open(f.replace('.json','.host')).read().split()[1]
    print(f.split('/')[-1], 'host',host,'mc',mc,'scav',sc,'maxheapMB',round(max(heap)/1e6,1), ' | '.join(f"p50 {r['p50_ms']} p90 {r['p90_ms']} p99 {r['p99_ms']} max {r['max_ms']} cpu {r['cpu_ms_per_job']} w {r['node_cpu_cores_by_thread']['v8_workers']}" for r in rows))
