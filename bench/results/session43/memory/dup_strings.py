"""Strings of a V8 .heapsnapshot held in many copies (same text, separate objects):
python3 dup_strings.py FILE [N] [JOBS]."""
import collections, json, sys
snap = json.load(open(sys.argv[1]))
top = int(sys.argv[2]) if len(sys.argv) > 2 else 15
jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 1
meta = snap["snapshot"]["meta"]; NF = meta["node_fields"]; nf = len(NF)
ntypes = meta["node_types"][0]; strings = snap["strings"]; nodes = snap["nodes"]
it, iname, isize = NF.index("type"), NF.index("name"), NF.index("self_size")
count = collections.Counter(); size = collections.Counter(); kinds = collections.Counter()
for i in range(0, len(nodes), nf):
    t = ntypes[nodes[i + it]]
    if t in ("string", "concatenated string", "sliced string"):
        text = strings[nodes[i + iname]]
        key = text[:4] + "…" if text.startswith("job_") else text[:50]
        count[key] += 1; size[key] += nodes[i + isize]; kinds[t] += 1
print("string kinds:", dict(kinds))
for key, c in count.most_common(top):
    print(f"{c/jobs:6.2f} /job {size[key]/jobs:7.1f} B/job  {key!r}")
