"""Each node's sampled wall time split: idle, the inline fsync (the thread blocked in
fdatasync), the garbage collector, and the rest (JS and ops; includes time the OS preempted
the thread). python3 split.py DIR"""
import collections, json, os, sys
folder = sys.argv[1]
for fname in sorted(os.listdir(folder)):
    if not fname.endswith(".cpuprofile"): continue
    p = json.load(open(os.path.join(folder, fname)))
    nodes = {x["id"]: x["callFrame"]["functionName"] for x in p["nodes"]}
    c = collections.Counter()
    for sid, dt in zip(p["samples"], p["timeDeltas"]):
        f = nodes[sid]
        k = f if f in ("(idle)", "op_fs_file_sync_data_sync", "(garbage collector)", "(program)", "op_fs_file_sync_data_async", "op_net_send_udp", "op_write") else "rest"
        c[k] += dt
    tot = sum(c.values())
    print(fname.split("-")[0], f"{tot/1e6:.1f} s:", ", ".join(f"{k} {v/tot*100:.1f} %" for k, v in c.most_common()))
