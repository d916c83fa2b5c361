"""Self size by (node type, name) in a V8 .heapsnapshot: python3 by_type.py FILE [N] [JOBS]."""
import collections, json, sys
snap = json.load(open(sys.argv[1]))
top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 1
meta = snap["snapshot"]["meta"]
fields = meta["node_fields"]; nf = len(fields)
types = meta["node_types"][0]
strings = snap["strings"]; nodes = snap["nodes"]
it, iname, isize = fields.index("type"), fields.index("name"), fields.index("self_size")
size = collections.Counter(); count = collections.Counter()
for i in range(0, len(nodes), nf):
    t = types[nodes[i + it]]
    name = strings[nodes[i + iname]] if t not in ("string", "concatenated string", "sliced string", "number", "hidden") else ""
    key = f"{t} {name[:60]}"
    size[key] += nodes[i + isize]; count[key] += 1
total = sum(size.values())
print(f"total self size {total/1e6:.1f} MB; per job {total/jobs:.0f} B")
for key, s in size.most_common(top):
    print(f"{s/jobs:8.1f} B/job {count[key]/jobs:6.2f} /job  {key}")
