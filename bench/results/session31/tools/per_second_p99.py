# p99 of each second of a step (scheduled -> received), from --latencies-out TSVs (plain or .gz).
import sys,gzip,collections
for f in sys.argv[1:]:
    op=gzip.open if f.endswith('.gz') else open
    L=[l.rstrip('\n').split('\t') for l in op(f,'rt')][1:]
    rows=sorted((float(r[4]),float(r[6]) if r[6] else None) for r in L)
    t0=rows[0][0]; sec=collections.defaultdict(list)
    for sc,rc in rows:
        if rc is not None: sec[int((sc-t0)/1000)].append(rc-sc)
    print(f.split('/')[-1], ' '.join('%d:%.0f'%(k,sorted(v)[int(len(v)*.99)]) for k,v in sorted(sec.items())))
