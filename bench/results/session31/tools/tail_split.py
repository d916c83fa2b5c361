# A --latencies-out TSV (with sent_ms and node): how much of each job's time from its schedule
# to the receiver is the generator's own lateness (sent - scheduled) and how much is hookd's
# (received - sent); by node; and the seconds of the step whose jobs were slowest.
import sys,collections
for f in sys.argv[1:]:
    L=[l.rstrip('\n').split('\t') for l in open(f)][1:]
    rows=sorted((float(r[4]),float(r[5]),float(r[6]) if r[6] else None,float(r[7]),r[8]) for r in L)
    q=lambda v,p: v[min(len(v)-1,int(len(v)*p))]
    late=sorted(s-sc for sc,a,rc,s,n in rows)
    tot=sorted(rc-sc for sc,a,rc,s,n in rows if rc is not None)
    hk=sorted(rc-s for sc,a,rc,s,n in rows if rc is not None)
    print(f)
    print('  generator lateness (sent - scheduled)   p50 %6.2f p99 %6.2f max %6.1f ms'%(q(late,.5),q(late,.99),late[-1]))
    print('  scheduled -> received (the sweep\'s)     p50 %6.2f p99 %6.2f max %6.1f ms'%(q(tot,.5),q(tot,.99),tot[-1]))
    print('  sent -> received (hookd alone)          p50 %6.2f p99 %6.2f max %6.1f ms'%(q(hk,.5),q(hk,.99),hk[-1]))
    bn=collections.defaultdict(list)
    for sc,a,rc,s,n in rows:
        if rc is not None: bn[n].append(rc-s)
    print('  by node that took the submit (sent -> received): '+', '.join('%s p50 %.1f p99 %.1f'%(n,q(sorted(v),.5),q(sorted(v),.99)) for n,v in sorted(bn.items())))
    t0=rows[0][0]; sec=collections.defaultdict(list)
    for sc,a,rc,s,n in rows:
        if rc is not None: sec[int((sc-t0)/1000)].append(rc-sc)
    worst=sorted(sec.items(), key=lambda kv:-max(kv[1]))[:5]
    print('  slowest seconds of the step (s: max, jobs > 15 ms): '+', '.join('%d: %.0f, %d'%(k,max(v),sum(1 for x in v if x>15)) for k,v in sorted(worst)))
