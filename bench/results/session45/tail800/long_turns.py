"""Long runs of busy samples in the nodes' V8 CPU profiles (one `bench cost --profiles-out`
rate): a run is consecutive samples that are not "(idle)" (a turn, or turns back to back with
no idle sample between, or a turn the OS preempted: the sampler cannot tell these apart).
Prints how much of each node's sampled wall time lies in runs of at least 5, 10 and 20 ms,
and the longest runs with their entry frame and top self frames.
python3 long_turns.py DIR [MIN_MS]"""
import collections, json, os, sys
folder = sys.argv[1]; min_ms = float(sys.argv[2]) if len(sys.argv) > 2 else 10
runs = []
for fname in sorted(os.listdir(folder)):
    if not fname.endswith(".cpuprofile"): continue
    node_name = fname.split("-")[0]
    p = json.load(open(os.path.join(folder, fname)))
    nodes = {x["id"]: x for x in p["nodes"]}
    parent = {}
    for x in p["nodes"]:
        for c in x.get("children", []): parent[c] = x["id"]
    def chain(nid):
        out = []
        while nid in nodes:
            out.append(nodes[nid]["callFrame"]); nid = parent.get(nid)
        return out[::-1]
    def name(f): return f"{f['functionName'] or '(anon)'} {f['url'].split('/')[-1]}:{f['lineNumber']+1}"
    t = 0.0; total = 0.0; cur = None
    in_runs = collections.Counter()
    def close(run):
        if run is None: return
        ms = run["us"] / 1000
        for b in (5, 10, 20):
            if ms >= b: in_runs[b] += run["us"]
        runs.append((ms, node_name, run["start"] / 1e6, run["entries"], run["self"]))
    for sid, dt in zip(p["samples"], p["timeDeltas"]):
        t += dt; total += dt
        frames = chain(sid)
        leaf = frames[-1]["functionName"] if frames else ""
        if leaf == "(idle)":
            close(cur); cur = None; continue
        if cur is None: cur = {"start": t, "us": 0.0, "entries": collections.Counter(), "self": collections.Counter()}
        cur["us"] += dt
        top = frames[1] if len(frames) > 1 else frames[0]
        cur["entries"][name(top)] += dt
        cur["self"][name(frames[-1])] += dt
    close(cur)
    print(f"{node_name}: {total/1e6:.1f} s sampled; in runs >= 5 ms {in_runs[5]/total*100:.1f} %, >= 10 ms {in_runs[10]/total*100:.1f} %, >= 20 ms {in_runs[20]/total*100:.1f} %")
runs.sort(reverse=True)
print(f"\nruns of at least {min_ms} ms: {sum(1 for r in runs if r[0] >= min_ms)}; the longest 25:")
for ms, node_name, start_s, entries, selfs in runs[:25]:
    e = ", ".join(f"{k} {v/1000:.1f}" for k, v in entries.most_common(3))
    s = ", ".join(f"{k} {v/1000:.1f}" for k, v in selfs.most_common(5))
    print(f"{ms:7.1f} ms {node_name} at {start_s:6.2f} s\n    entries: {e}\n    self: {s}")
