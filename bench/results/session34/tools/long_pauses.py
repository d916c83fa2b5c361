"""The long mark-compact pauses in a bench run's stderr (nodes started with --trace-gc-nvp via
session 32's probe patch): for every pause of at least MIN ms (default 100), the node, the time,
the pause, how much of it was `finish.sweep_array_buffers`, main-thread marking, and whether the
GC ran with reduce_memory. Then the count and the summed pause and sweep time.
Usage: python3 long_pauses.py FILE.err[.gz] [MIN]"""
import gzip, re, sys

path = sys.argv[1]
least = float(sys.argv[2]) if len(sys.argv) > 2 else 100.0
opener = gzip.open if path.endswith('.gz') else open
rows = []
with opener(path, 'rt', errors='replace') as f:
    for line in f:
        if 'GC: {' not in line or '"gc":"mc"' not in line:
            continue
        node = re.search(r'\[(n\d)\]', line)
        at = re.search(r'\]\s+(\d+) ms: GC', line)
        def num(field):
            m = re.search(r'"' + re.escape(field) + r'":([\d.]+)', line)
            return float(m.group(1)) if m else 0.0
        pause = num('pause')
        if pause < least:
            continue
        rows.append((node.group(1) if node else '?', int(at.group(1)) if at else -1, pause,
                     num('finish.sweep_array_buffers'), num('mark'),
                     '"reduce_memory":true' in line))
print('node | ms since start | pause ms | sweep_array_buffers ms | mark ms | reduce_memory')
for r in sorted(rows, key=lambda r: r[1]):
    print(f'{r[0]} | {r[1]} | {r[2]:.0f} | {r[3]:.0f} | {r[4]:.1f} | {r[5]}')
print(f'{len(rows)} pauses of {least:.0f} ms or more, {sum(r[2] for r in rows):.0f} ms in all, '
      f'{sum(r[3] for r in rows):.0f} ms of it sweeping ArrayBuffers')
