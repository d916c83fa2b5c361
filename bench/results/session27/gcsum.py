#!/usr/bin/env python3
"""Per node, from --trace-gc lines: scavenges, major GCs, old-gen growth between GCs (MB, a
stand-in for promoted bytes), and the summed pauses. Usage: gcsum.py FILE... (out and err)."""
import re, sys, collections
pat = re.compile(r"\[(n\d)\] \[\d+:0x[0-9a-f]+\]\s+(\d+) ms: (Scavenge|Incremental Mark-Compact|Mark-Compact|Minor Mark-Sweep)[^0-9]*([0-9.]+) \(([0-9.]+)\) -> ([0-9.]+) \(([0-9.]+)\) MB.*?, ([0-9.]+) / ([0-9.]+) ms")
nodes = collections.defaultdict(lambda: {"sc": 0, "mc": 0, "grow": 0.0, "prev": None, "sc_ms": 0.0, "mc_ms": 0.0, "sc_max": 0.0})
for f in sys.argv[1:]:
    for line in open(f, errors="replace"):
        m = pat.search(line)
        if not m: continue
        n, t, kind, before, _, after, _, pause, _ = m.groups()
        d = nodes[n]; before = float(before); after = float(after); pause = float(pause)
        if kind == "Scavenge":
            d["sc"] += 1; d["sc_ms"] += pause; d["sc_max"] = max(d["sc_max"], pause)
            if d["prev"] is not None and after > d["prev"]: d["grow"] += after - d["prev"]
        else:
            d["mc"] += 1; d["mc_ms"] += pause
            if d["prev"] is not None and before > d["prev"]: d["grow"] += before - d["prev"]
        d["prev"] = after
tot = collections.Counter()
for n in sorted(nodes):
    d = nodes[n]
    for k in ("sc", "mc", "grow", "sc_ms", "mc_ms"): tot[k] += d[k]
    print(f"{n}: scavenges {d['sc']:4d} ({d['sc_ms']:7.1f} ms, max {d['sc_max']:5.1f}) major {d['mc']:3d} ({d['mc_ms']:6.1f} ms) old-gen growth {d['grow']:6.1f} MB")
print(f"all: scavenges {tot['sc']} ({tot['sc_ms']:.0f} ms) major {tot['mc']} ({tot['mc_ms']:.0f} ms) growth {tot['grow']:.1f} MB")
