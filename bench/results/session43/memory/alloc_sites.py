"""Allocation by (function, file:line) over the five nodes' .heapprofile files of one
`bench cost --profiles-out` rate, in KB a job a node: python3 alloc_sites.py DIR JOBS [N]."""
import collections, json, sys
folder, jobs = sys.argv[1], float(sys.argv[2]); top = int(sys.argv[3]) if len(sys.argv) > 3 else 40
by = collections.Counter()
def walk(node):
    f = node["callFrame"]
    self = sum(s["size"] * 0 for s in []) + node.get("selfSize", 0)
    by[f"{f['functionName'] or '(anon)'} {f['url'].split('/')[-1]}:{f['lineNumber']+1}"] += self
    for c in node.get("children", []): walk(c)
for n in range(1, 6):
    walk(json.load(open(f"{folder}/n{n}-1.heapprofile"))["head"])
total = sum(by.values())
print(f"{total/5/jobs/1024:.2f} KB a job a node in all")
for k, v in by.most_common(top): print(f"{v/5/jobs/1024:6.2f} KB  {k}")
