# One line a run of an A/B directory (retention/, gc_flags/, old_space/: files ARM.ROUND.json with
# ARM.ROUND.err.gz and ARM.ROUND.host beside them): the host loop, the major GCs (mark-compacts)
# over the five nodes from the `--trace-gc-nvp` lines, and per step p99, max, CPU ms a job (all
# processes) and V8's worker threads (cores). Usage: python3 runs_table.py DIR > DIR/table.txt
import json,re,glob,gzip,os,sys
d=sys.argv[1]
runs=[]
for f in glob.glob(os.path.join(d,'*.json')):
    name=os.path.basename(f)[:-5]
    if name.startswith('long_'): continue
    arm,r=name.rsplit('.',1)
    rows=json.loads(open(f).read().strip().splitlines()[-1])
    err=gzip.open(os.path.join(d,name+'.err.gz'),'rt',errors='replace').read()
    host=open(os.path.join(d,name+'.host')).read().split()[1]
    runs.append((int(r),arm,host,len(re.findall(r'"gc":"mc"',err)),rows))
print('round | arm | host loop ms | major GCs | p99 ms by step | max ms by step | CPU ms a job by step | V8 workers, cores, by step')
for r,arm,host,mc,rows in sorted(runs):
    col=lambda f: ' / '.join(f(x) for x in rows)
    print(r,'|',arm,'|',host,'|',mc,'|',col(lambda x:str(x['p99_ms'])),'|',col(lambda x:str(round(x['max_ms']))),'|',col(lambda x:str(x['cpu_ms_per_job'])),'|',col(lambda x:str(x['node_cpu_cores_by_thread']['v8_workers'])))
