#!/usr/bin/env python3
"""Summary of the catch-up log A/B: each round's row, and medians per kind. Run here."""
import glob, json, statistics
rows = {"base": [], "new": []}
for f in sorted(glob.glob("*.json")):
    tag, kind, rnd, _ = f.split(".")
    r = json.load(open(f))[0]
    mc = sum(1 for _ in open(f"mark_compacts.{tag}.{kind}.{rnd}.txt"))
    rows[kind].append((f, r["p50_ms"], r["p99_ms"], r["max_ms"], r["cpu_ms_per_job"], mc, r.get("node_heap_used_mb")))
    print(f"{f:22} p50 {r['p50_ms']:5} p99 {r['p99_ms']:6} max {r['max_ms']:6} cpu ms/job {r['cpu_ms_per_job']:6} major GCs (5 nodes) {mc:3} heap MB {r.get('node_heap_used_mb')}")
for kind, rs in rows.items():
    print(f"{kind}: {len(rs)} runs, median p99 {statistics.median(x[2] for x in rs)}, median CPU ms/job {statistics.median(x[4] for x in rs)}, mean major GCs {statistics.mean(x[5] for x in rs):.1f}")
