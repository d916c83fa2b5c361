import json,sys
for f in sys.argv[1:]:
    d=json.load(open(f))
    for r in d:
        print(f.split('/')[-1], {k:r.get(k) for k in ('rate','accepted','lost','p50_ms','p99_ms','max_ms','cpu_ms_per_job','node_cpu_cores_by_thread')})
