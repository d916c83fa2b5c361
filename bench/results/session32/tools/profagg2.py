# Self time by function over every profile matched by GLOB (argv 1), idle left out, and the self
# time under the nearest frame whose URL contains TARGET (argv 2, default ext:deno_net/).
# Usage: python3 profagg2.py 'DIR/*.cpuprofile' [TARGET] [N]
import sys,collections
from cpuprof import samples
byfn=collections.Counter(); tot=0; under=collections.Counter()
target=sys.argv[2] if len(sys.argv)>2 else 'ext:deno_net/'
for nodes,parent,dt in samples(sys.argv[1]):
    for nid,t in dt.items():
        cf=nodes[nid]['callFrame']
        if cf['functionName']=='(idle)': continue
        tot+=t
        url=cf['url'].split('/')[-1] if cf['url'] else '(native)'
        byfn[(cf['functionName'] or '(anon)')+' '+url+':'+str(cf['lineNumber']+1)]+=t
        a=nid
        while a is not None:
            c=nodes[a]['callFrame']
            if target in c['url']:
                under[(c['functionName'] or '(anon)')+' | self='+(cf['functionName'] or '(anon)')]+=t
                break
            a=parent.get(a)
print('total ms',tot/1000)
for k,v in byfn.most_common(int(sys.argv[3]) if len(sys.argv)>3 else 40): print('%6.2f%% %s'%(100*v/tot,k))
print('--- under',target)
for k,v in under.most_common(25): print('%6.2f%% %s'%(100*v/tot,k))
