# One line per run of old_space/ab.sh: major GCs (mark-compacts) over the five nodes, and per step
# p99, max, CPU ms a job (all processes) and V8's worker threads (cores). Run inside old_space/.
import json,re,glob,gzip,collections
rows=collections.defaultdict(dict)
for f in sorted(glob.glob('*.json')):
    if f.startswith('long_'): continue
    arm,r=f[:-5].rsplit('.',1)
    rr=json.loads(open(f).read().strip().splitlines()[-1])
    err=gzip.open(f[:-5]+'.err.gz','rt',errors='replace').read()
    rows[int(r)][arm]=(len(re.findall(r'"gc":"mc"',err)),rr)
print('round | arm | major GCs | p99 ms by step | max ms by step | CPU ms a job by step | V8 workers, cores, by step')
for r in sorted(rows):
    for arm,(mc,rr) in sorted(rows[r].items()):
        print(r,'|',arm,'|',mc,'|',' / '.join(str(x['p99_ms']) for x in rr),'|',' / '.join(str(round(x['max_ms'])) for x in rr),'|',' / '.join(str(x['cpu_ms_per_job']) for x in rr),'|',' / '.join(str(x['node_cpu_cores_by_thread']['v8_workers']) for x in rr))
