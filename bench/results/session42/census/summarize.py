"""Per-job syscall counts from census.sh's perf CSV: summed over the five nodes, by thread kind.

Usage: python3 summarize.py PREFIX RATE WINDOW_S. The main thread is the one named after the
process (`deno-PID` with TID == PID); tokio's and V8's threads are grouped by their names.
"""
import collections
import csv
import sys

prefix, rate, window = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
jobs = rate * window
pids = set(open(prefix + ".meta").read().split("pids ")[1].strip().split(","))
by = collections.defaultdict(collections.Counter)
for row in csv.reader(open(prefix + ".perf.csv")):
    if len(row) < 4 or not row[1].strip().isdigit():
        continue
    name, tid = row[0].rsplit("-", 1)
    kind = "main" if tid in pids else name.strip()
    event = row[3].replace("syscalls:sys_enter_", "")
    by[kind][event] += int(row[1])
for kind, counts in sorted(by.items(), key=lambda kv: -sum(kv[1].values())):
    total = sum(counts.values())
    if total == 0:
        continue
    top = ", ".join(f"{e} {c / jobs:.2f}" for e, c in counts.most_common(12) if c > 0)
    print(f"{kind}: {total / jobs:.2f} syscalls a job ({top})")
