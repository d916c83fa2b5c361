# From a `bench replication` run with NODE_V8_EXTRA=--trace-opt,--trace-deopt (stderr, gzipped or
# not): V8's compile jobs by phase of the bench (first compile of a (node, function, tier) or a
# later one), the functions with the most compile time, and when the hottest functions reached
# TurboFan on n1. "took a, b, c ms" is V8's own wall time of the job's three parts (prepare on
# the main thread, execute on a worker, finalize on the main thread): wall time on a loaded
# 2-core host, not CPU time.
import re,sys,gzip,collections
f=sys.argv[1]
lines=(gzip.open(f,'rt',errors='replace') if f.endswith('.gz') else open(f,errors='replace')).readlines()
pat=re.compile(r'\[(n\d)\] \[completed compiling 0x\w+ <JSFunction (\S*).*?\(target (\w+)\)( OSR)? - took ([\d.]+), ([\d.]+), ([\d.]+) ms')
seen=collections.Counter(); phase='start'; order=[]; first=collections.Counter(); again=collections.Counter()
tot=collections.Counter(); cnt=collections.Counter(); tiers=collections.Counter()
hot=('decodeAfterOuterHeader','onDatagram','decodeMessage','encodeMessage','apply','receive')
tierup=[]
for line in lines:
    if line.startswith('bench replication: ') and not line.startswith('bench replication: [n'):
        p=line[19:].strip()
        if ' offered ' in p or not p: 
            if ' offered ' in p: phase=p.split(' offered')[0]; order.append(phase)
            continue
        phase=p[:40]; order.append(phase); continue
    m=pat.search(line)
    if not m: continue
    node,name,tier=m.group(1),m.group(2),m.group(3)
    ms=sum(float(m.group(i)) for i in (5,6,7))
    k=(node,name,tier); seen[k]+=1
    (first if seen[k]==1 else again)[phase]+=ms
    tot[(name,tier)]+=ms; cnt[(name,tier)]+=1; tiers[tier]+=ms
    if node=='n1' and tier=='TURBOFAN_JS' and name in hot and seen[k]==1: tierup.append((phase,name,ms))
print('compile wall ms over the five nodes, by tier:', {k:round(v) for k,v in tiers.items()})
print('first compiles %d jobs %.0f ms; later compiles of the same (node, name, tier) %d jobs %.0f ms'%(
  sum(1 for v in seen.values()), sum(first.values()), sum(v-1 for v in seen.values()), sum(again.values())))
print('\nby phase (the generator\'s progress lines mark each second):')
for p in dict.fromkeys(order): print(f'  {p:42s} first {first[p]:7.0f}  again {again[p]:7.0f}')
print('\nfunctions with the most compile time (ms, jobs):')
for k,v in tot.most_common(30): print(f'  {v:7.1f} {cnt[k]:3d} {k[0]} {k[1]}')
print('\nn1: first TurboFan compile of the hottest functions, by phase:')
for p,n,ms in tierup: print(f'  {p:42s} {n} ({ms:.0f} ms)')
