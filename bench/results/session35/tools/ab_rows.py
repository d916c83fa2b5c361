# One line a run of ab200.sh: the 200/s step's accepted, refused, lost, p50/p99/worst, CPU a job,
# and every process's GC trace summed (DENO_V8_FLAGS=--trace-gc reaches the bench, sink and
# generator too): mark-compacts, reduce-memory ones, atomic pauses, scavenges.
# Usage: python3 ab_rows.py DIR/ab.ARM.N.out ...  (beside it: .err or .err.gz, .host)
import json,sys,re,gzip,os
from rows import describe
for f in sys.argv[1:]:
    r=[json.loads(l) for l in open(f) if l.startswith('[{')][0][0]
    stem=os.path.splitext(f)[0]; err=stem+'.err'
    if not os.path.exists(err): err+='.gz'
    mc=0; mcp=0.0; longest=0.0; sc=0; scmax=0.0; red=0
    for line in list((gzip.open if err.endswith('.gz') else open)(err,'rt',errors='replace'))+list(open(f,errors='replace')):
        m=re.search(r'(Mark-Compact|Scavenge)( \(reduce\))? .*?MB, (?:pooled: [\d.]+ MB, )?([\d.]+) / [\d.]+ ms',line)
        if not m: continue
        p=float(m.group(3))
        if m.group(1)=='Mark-Compact':
            mc+=1; mcp+=p; longest=max(longest,p); red+=1 if m.group(2) else 0
        else:
            sc+=1; scmax=max(scmax,p)
    host=open(stem+'.host').read().split()[1]
    print(f.split('/')[-1], 'host',host,describe(r),'| MC (whole run, all procs)',mc,'reduce',red,'pauses %.0f longest %.0f'%(mcp,longest),'| scav',sc,'max %.0f'%scmax)
