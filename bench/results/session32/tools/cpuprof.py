# Shared by profagg2.py, bycomp.py and callers.py: V8 .cpuprofile files read as sampled time per
# profile node. samples(GLOB) yields (nodes by id, parent by id, {node id: sampled µs}) per file.
import json,glob,collections
def samples(pattern):
    for f in glob.glob(pattern):
        p=json.load(open(f))
        nodes={n['id']:n for n in p['nodes']}
        parent={c:n['id'] for n in p['nodes'] for c in n.get('children',[])}
        dt=collections.defaultdict(float)
        for s,d in zip(p['samples'],p['timeDeltas']): dt[s]+=d
        yield nodes,parent,dt
