"""Objects of a V8 .heapsnapshot grouped by their property names (their shape), with the self
size of each and of the numbers and strings they point to directly:
python3 by_shape.py FILE [N] [JOBS]."""
import collections, json, sys
snap = json.load(open(sys.argv[1]))
top = int(sys.argv[2]) if len(sys.argv) > 2 else 20
jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 1
meta = snap["snapshot"]["meta"]
nf = len(meta["node_fields"]); ef = len(meta["edge_fields"])
ntypes = meta["node_types"][0]; etypes = meta["edge_types"][0]
strings = snap["strings"]; nodes = snap["nodes"]; edges = snap["edges"]
NF = meta["node_fields"]; EF = meta["edge_fields"]
it, iname, isize, iec = NF.index("type"), NF.index("name"), NF.index("self_size"), NF.index("edge_count")
et, ename, eto = EF.index("type"), EF.index("name_or_index"), EF.index("to_node")
shape_size = collections.Counter(); shape_count = collections.Counter(); shape_children = collections.Counter()
e = 0
for i in range(0, len(nodes), nf):
    n_edges = nodes[i + iec]
    t = ntypes[nodes[i + it]]
    if t == "object" and strings[nodes[i + iname]] == "Object":
        props = []; child = 0
        for k in range(e, e + n_edges * ef, ef):
            etype = etypes[edges[k + et]]
            if etype == "property":
                props.append(strings[edges[k + ename]])
                to = edges[k + eto]
                if ntypes[nodes[to + it]] in ("number", "string", "concatenated string"):
                    child += nodes[to + isize]
        key = ",".join(props)[:110]
        shape_size[key] += nodes[i + isize]; shape_count[key] += 1; shape_children[key] += child
    e += n_edges * ef
for key, s in shape_size.most_common(top):
    print(f"{s/jobs:7.1f} B/job self, {shape_children[key]/jobs:6.1f} B/job numbers+strings, {shape_count[key]/jobs:5.2f}/job  {{{key}}}")
