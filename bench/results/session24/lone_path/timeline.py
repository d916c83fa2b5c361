"""Reads the merged milestone trace (`sort -n trace.*`) of lone jobs and prints, per job and as
medians over the jobs, the intervals of a lone job's path. Usage: python3 timeline.py all.txt N
(N: jobs to print in full)."""
import sys, statistics
lines = [l.rstrip("\n").split(None, 2) for l in open(sys.argv[1])]
show = int(sys.argv[2]) if len(sys.argv) > 2 else 2
starts = [i for i, l in enumerate(lines) if l[2].startswith("http-in POST")]
spans = {}
def add(k, v):
    spans.setdefault(k, []).append(v)
for n, si in enumerate(starts):
    t0 = int(lines[si][0])
    ev = []
    for l in lines[si:]:
        t = int(l[0])
        if t - t0 > 9000: break
        ev.append(((t - t0) / 1000, l[1], l[2].strip()))
    def first(node, prefix, after=-1.0):
        for t, nd, what in ev:
            if (node is None or nd == node) and what.startswith(prefix) and t > after: return t
        return None
    sends = [t for t, nd, w in ev if nd == "n1" and w.startswith("send 3")][:4]
    sched = first("n1", "schedule"); dw = first("n1", "deliver-write"); sink = first(None, "sink-in")
    out = first("n1", "http-out"); fs = first("n1", "fsync-inline"); fd = first("n1", "fsync-done")
    if len(sends) == 4 and None not in (sched, dw, sink, out):
        add("http-in -> first SUBMIT sent", sends[0])
        add("first -> fourth SUBMIT sent", sends[3] - sends[0])
        add("largest gap between two SUBMIT sends", max(b - a for a, b in zip(sends, sends[1:])))
        add("http-in -> majority (schedule)", sched)
        add("schedule -> delivery written", dw - sched)
        add("http-in -> receiver has the request", sink)
        add("http-in -> 202 written", out)
        if fs is not None and fd is not None: add("coordinator's own fsync", fd - fs)
        for node in ("n2", "n3", "n4", "n5"):
            r = first(node, "recv 3"); w = first(node, "wal-write"); a = first(node, "fsync-inline"); b = first(node, "fsync-done"); s = first(node, "send 155")
            if None not in (r, w, a, b, s):
                add("replica: SUBMIT in -> WAL write", w - r)
                add("replica: fsync", b - a)
                add("replica: fsync done -> ACK sent", s - b)
    if n >= len(starts) - show:
        print(f"----- job {n + 1}")
        for t, nd, what in ev:
            if t > 6.5: break
            print(f"{t:7.3f} {nd:7s} {what}")
print(f"\nmedians (p90) over {len(spans.get('http-in -> first SUBMIT sent', []))} lone jobs, ms:")
for k, v in spans.items():
    v = sorted(v)
    print(f"  {k:40s} {statistics.median(v):6.3f}  ({v[int(0.9 * (len(v) - 1))]:6.3f})")
