"""Where a node's event-loop turns go at a low rate, from 50-µs V8 CPU profiles (one
`bench cost --profiles-out` rate, the sampling interval set to 50 µs in a scratch tree):
a turn is a run of samples that are not "(idle)"; each is named by the frame under the root
of its first sample that is not "(program)". Prints, summed over the five nodes and divided by
JOBS: turns, their sampled time (the inline fsync's time, which blocks the thread, apart), by
entry. python3 turns.py DIR JOBS"""
import collections, json, sys
folder, jobs = sys.argv[1], float(sys.argv[2])
count = collections.Counter(); time_us = collections.Counter(); fsync_us = collections.Counter()
self_by_entry = collections.defaultdict(collections.Counter)
for n in range(1, 6):
    p = json.load(open(f"{folder}/n{n}-1.cpuprofile"))
    nodes = {x["id"]: x for x in p["nodes"]}
    parent = {}
    for x in p["nodes"]:
        for c in x.get("children", []): parent[c] = x["id"]
    def chain(nid):
        out = []
        while nid in nodes:
            out.append(nodes[nid]["callFrame"]); nid = parent.get(nid)
        return out[::-1]  # root first
    def name(f): return f"{f['functionName'] or '(anon)'} {f['url'].split('/')[-1]}:{f['lineNumber']+1}"
    entry = None; in_turn = False
    for sid, dt in zip(p["samples"], p["timeDeltas"]):
        frames = chain(sid)
        leaf = frames[-1]["functionName"] if frames else ""
        if leaf == "(idle)":
            in_turn = False; continue
        if not in_turn or entry == "(program) :0":
            top = frames[1] if len(frames) > 1 else frames[0]
            e = name(top)
            if not in_turn: count[e] += 1
            elif entry == "(program) :0": count[entry] -= 1; count[e] += 1
            entry = e; in_turn = True
        if leaf == "op_fs_file_sync_data_sync": fsync_us[entry] += dt
        else:
            time_us[entry] += dt
            self_by_entry[entry][name(frames[-1])] += dt
tot_t = sum(time_us.values()); tot_n = sum(count.values())
print(f"turns a job (five nodes): {tot_n/jobs:.1f}; sampled time a job outside inline fsyncs: {tot_t/jobs:.0f} µs, in them {sum(fsync_us.values())/jobs:.0f} µs")
for e, t in time_us.most_common(14):
    c = count[e]
    print(f"{c/jobs:6.2f} turns {t/jobs:7.0f} µs ({t/max(c,1):6.0f} µs a turn) + fsync {fsync_us[e]/jobs:5.0f} µs  {e}")
    for fn, s in self_by_entry[e].most_common(5):
        print(f"              {s/jobs:6.1f} µs  {fn}")
