# Sums perf_threads.sh's per-thread task clock and switches by thread kind; µs per job at 200/s
# over the 8-s window (1,600 jobs).
import sys, glob, collections
for f in sorted(glob.glob("threads.*.perf")):
    clock = collections.Counter(); sw = collections.Counter()
    for line in open(f):
        parts = line.strip().split(",")
        if len(parts) < 4 or parts[1] in ("", "<not counted>"): continue
        kind = parts[0].rsplit("-", 1)[0]
        kind = "main" if kind == "deno" else kind
        if parts[3] == "task-clock": clock[kind] += float(parts[1])
        elif parts[3] == "context-switches": sw[kind] += float(parts[1])
    jobs = 200 * 8
    print(f, " ".join(f"{k}: {clock[k]*1000/jobs:.0f} µs/job, {sw[k]/jobs:.1f} switches/job;" for k in sorted(clock)), f"total {sum(clock.values())*1000/jobs:.0f} µs/job")
