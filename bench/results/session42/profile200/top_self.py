"""Self time by function over the five nodes' .cpuprofile files of one `bench cost` rate.

Usage: python3 top_self.py DIR [N]. V8's profiler samples the thread's wall time: a thread
blocked in a syscall (an inline fdatasync) counts as busy in that op, so this is where the event
loop's time goes, not CPU.
"""
import collections
import json
import sys

folder, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30
self_us = collections.Counter()
idle_us = total_us = 0
for n in range(1, 6):
    profile = json.load(open(f"{folder}/n{n}-1.cpuprofile"))
    nodes = {x["id"]: x for x in profile["nodes"]}
    for sample, dt in zip(profile["samples"], profile["timeDeltas"]):
        frame = nodes[sample]["callFrame"]
        name = frame["functionName"] or "(anonymous)"
        total_us += dt
        if name == "(idle)":
            idle_us += dt
            continue
        self_us[f"{name} {frame['url'].split('/')[-1]}:{frame['lineNumber']}"] += dt
busy_us = total_us - idle_us
print(f"sampled {total_us / 1e6:.1f} s over five nodes: busy {busy_us / 1e6:.1f} s, idle {idle_us / 1e6:.1f} s")
for key, us in self_us.most_common(top):
    print(f"{100 * us / busy_us:5.1f} % {us / 1e3:9.1f} ms  {key}")
