# Self time of the frames whose URL contains PAT (argv 2), by function, over every profile matched
# by GLOB (argv 1); per job assumes the 2,000 jobs of a 10-s step at 200/s.
# Usage: python3 bycomp.py 'DIR/*.cpuprofile' /src/jobs/ [N]
import sys,collections
from cpuprof import samples
pat=sys.argv[2]
agg=collections.Counter(); tot=0
for nodes,parent,dt in samples(sys.argv[1]):
    for nid,t in dt.items():
        cf=nodes[nid]['callFrame']
        if pat in cf['url']:
            agg[cf['functionName']+' '+cf['url'].split('/')[-1]+':'+str(cf['lineNumber']+1)]+=t; tot+=t
print('self ms in',pat,tot/1000, ' per job µs (2000 jobs)', tot/2000)
for k,v in agg.most_common(int(sys.argv[3]) if len(sys.argv)>3 else 40): print('%8.1f ms %5.1f%% %s'%(v/1000,100*v/tot,k))
