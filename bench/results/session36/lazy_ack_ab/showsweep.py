import json,glob,sys
for f in sorted(glob.glob(sys.argv[1]+'/*.json')):
    txt=open(f).read().strip().splitlines()[-1]
    d=json.loads(txt)
    for r in (d if isinstance(d,list) else [d]):
        print(f.split('/')[-1], r.get('rate'), r.get('loss'), {k:r.get(k) for k in ['accepted','lost','p50_ms','p99_ms','cpu_ms_per_job','datagrams_per_job','timer_wakeups_per_job','wakeups_per_job','ack_only_datagrams_per_job']})
