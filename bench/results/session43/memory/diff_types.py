"""What a node's heap gained per job between two V8 .heapsnapshot files of one process:
self size by (node type, name) in B, objects grouped by their property names.
python3 diff_types.py EARLY LATE JOBS_BETWEEN [N]"""
import collections, json, sys

def tally(path):
    snap = json.load(open(path))
    meta = snap["snapshot"]["meta"]; NF = meta["node_fields"]; nf = len(NF); EF = meta["edge_fields"]; ef = len(EF)
    ntypes = meta["node_types"][0]; etypes = meta["edge_types"][0]
    strings = snap["strings"]; nodes = snap["nodes"]; edges = snap["edges"]
    it, iname, isize, iec = NF.index("type"), NF.index("name"), NF.index("self_size"), NF.index("edge_count")
    et, ename = EF.index("type"), EF.index("name_or_index")
    size = collections.Counter(); count = collections.Counter(); e = 0
    for i in range(0, len(nodes), nf):
        n = nodes[i + iec]; t = ntypes[nodes[i + it]]
        if t == "object":
            props = [strings[edges[k + ename]] for k in range(e, e + n * ef, ef) if etypes[edges[k + et]] == "property"]
            key = f"object {strings[nodes[i + iname]][:30]} {{{','.join(props)[:90]}}}"
        elif t in ("string", "number", "concatenated string", "sliced string"):
            key = t
        else:
            key = f"{t} {strings[nodes[i + iname]][:50]}"
        size[key] += nodes[i + isize]; count[key] += 1; e += n * ef
    return size, count

(s0, c0), (s1, c1) = tally(sys.argv[1]), tally(sys.argv[2])
jobs = float(sys.argv[3]); top = int(sys.argv[4]) if len(sys.argv) > 4 else 30
ds = {k: s1[k] - s0[k] for k in set(s0) | set(s1)}
print(f"heap self size {sum(s0.values())/1e6:.1f} -> {sum(s1.values())/1e6:.1f} MB: {(sum(s1.values())-sum(s0.values()))/jobs:.0f} B a job over {jobs:.0f} jobs")
for k, d in sorted(ds.items(), key=lambda kv: -abs(kv[1]))[:top]:
    print(f"{d/jobs:8.1f} B/job {(c1[k]-c0[k])/jobs:7.2f} /job  {k}")
