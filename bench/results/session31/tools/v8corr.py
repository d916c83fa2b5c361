import re,sys,glob,collections
err,lat,logdir=sys.argv[1],sys.argv[2],sys.argv[3]; B=int(sys.argv[4]) if len(sys.argv)>4 else 250
origin={}
for line in open(err):
    m=re.search(r'\[(n\d)\] time-origin (\d+) ([\d.]+)',line)
    if m: origin[m.group(2)]=(m.group(1),float(m.group(3)))
L=[l.rstrip('\n').split('\t') for l in open(lat)][1:]
rows=sorted((float(r[4]),float(r[6]) if r[6] else None,float(r[7]),r[8]) for r in L)
t0=rows[0][0]
tf=collections.Counter(); mg=collections.Counter(); tfn=collections.defaultdict(list); gc=collections.Counter()
for f in glob.glob(logdir+'/v8-*.log'):
    pid=re.search(r'v8-(\d+)',f).group(1)
    if pid not in origin: continue
    node,org=origin[pid]; starts={}
    for line in open(f,errors='replace'):
        if line.startswith('timer-event-start,V8.RecompileConcurrent'):
            starts['r']=int(line.split(',')[2])
        elif line.startswith('timer-event-end,V8.RecompileConcurrent') and 'r' in starts:
            s=starts.pop('r'); e=int(line.split(',')[2])
            ep=org+s/1000; b=int((ep-t0)//B); tf[b]+=(e-s)/1000
        elif line.startswith('code-creation,JS'):
            p=line.rstrip('\n').split(',')
            if p[-1].startswith('*') or p[-1].startswith('o*'):
                ep=org+int(p[3])/1000; b=int((ep-t0)//B); tfn[b].append(node+':'+p[6].split(' ')[0][:28]+'/'+p[5])
            elif '+' in p[-1]:
                ep=org+int(p[3])/1000; b=int((ep-t0)//B); mg[b]+=1
bins=collections.defaultdict(list)
for sc,rc,s,n in rows:
    if rc: bins[int((s-t0)//B)].append(rc-s)
print('bin_s  maxlat  turbofan_bg_ms maglev_installs  turbofan installs')
for b in sorted(bins):
    print(f'{b*B/1000:6.2f} {max(bins[b]):6.1f} {tf[b]:8.1f} {mg[b]:4d}  {" ".join(tfn[b])[:200]}')
