# Time spent inside any frame named NAME (argv 2), by its DEPTH callers, over every profile
# matched by GLOB (argv 1). Usage: python3 callers.py 'DIR/*.cpuprofile' setTimeout [DEPTH]
import sys,collections
from cpuprof import samples
name=sys.argv[2]; depth=int(sys.argv[3]) if len(sys.argv)>3 else 4
agg=collections.Counter(); tot=0
for nodes,parent,dt in samples(sys.argv[1]):
    for nid,t in dt.items():
        a=nid
        while a is not None and nodes[a]['callFrame']['functionName']!=name: a=parent.get(a)
        if a is None: continue
        chain=[]; b=parent.get(a)
        while b is not None and len(chain)<depth:
            cf=nodes[b]['callFrame']; chain.append((cf['functionName'] or '(anon)')+'@'+cf['url'].split('/')[-1]+':'+str(cf['lineNumber']+1)); b=parent.get(b)
        agg[' <- '.join(chain)]+=t; tot+=t
print('inclusive ms',tot/1000)
for k,v in agg.most_common(15): print('%8.1f ms %s'%(v/1000,k))
