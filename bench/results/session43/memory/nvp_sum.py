"""Sums V8's --trace-gc-nvp records of one node from a bench's stderr (the node lines
prefixed `[nN] `): pauses and background times by collector, over the records whose time is
at or past START_MS of the node's clock. python3 nvp_sum.py ERR NODE START_MS"""
import collections, json, re, sys
err, node, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
text = "".join(l.split(f"[{node}] ", 1)[1].rstrip("\n") for l in open(err) if f"[{node}] " in l)
sums = collections.defaultdict(collections.Counter)
for m in re.finditer(r"(\d+) ms: GC: (\{.*?\})(?=\[|\{\"event|$)", text):
    t = float(m.group(1))
    try:
        rec = json.loads(m.group(2))
    except json.JSONDecodeError:
        continue
    if t < start: continue
    kind = rec.get("gc", "?")
    s = sums[kind]; s["count"] += 1
    for k, v in rec.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and ("time" in k or k in ("pause", "promoted", "new_space_survived", "allocated") or k.startswith("background") or k.startswith("scavenge") or k.startswith("mark") or k.startswith("sweep") or k.startswith("evacuate") or k.startswith("clear") or k.startswith("mc.")):
            s[k] += v
for kind, s in sums.items():
    print(f"== {kind}: {s['count']} records")
    for k, v in sorted(s.items(), key=lambda kv: -kv[1])[:30]:
        print(f"   {k} {v:.1f}")
