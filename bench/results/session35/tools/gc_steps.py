"""Mark-compacts of a bench run's nodes by step, from their `--trace-gc` lines (nodes started
with NODE_V8_EXTRA=--trace-gc through session 32's probe patch). Each GC line is put in the step
whose progress line ("rate R: …") came last before it on stderr (before the first one: warm-up).
Per step: mark-compacts, how many ran with reduce-memory ("(reduce)"), the atomic pauses summed
and the longest, and the incremental marking steps summed (main-thread time too, spread over the
marking's wall time). Then every mark-compact of at least MIN ms of atomic pause.
Usage: python3 gc_steps.py FILE.err[.gz] [MIN]"""
import gzip, re, sys
from collections import OrderedDict

path = sys.argv[1]
least = float(sys.argv[2]) if len(sys.argv) > 2 else 100.0
opener = gzip.open if path.endswith('.gz') else open
gc_re = re.compile(
    r'\[(n\d)\].*?(\d+) ms: (?:Incremental )?Mark-Compact( \(reduce\))? ([\d.]+) \([\d.]+\) -> '
    r'([\d.]+) \([\d.]+\) MB, pooled: [\d.]+ MB, ([\d.]+) / [\d.]+ ms'
    r'(?: \(\+ ([\d.]+) ms in \d+ steps)?')
step = 'warm-up'
steps = OrderedDict()
long_rows = []
with opener(path, 'rt', errors='replace') as f:
    for line in f:
        m = re.search(r'loss [\d.]+ rate (\d+): ', line)
        if m and 'GC' not in line:
            step = 'rate ' + m.group(1)
            continue
        if 'Mark-Compact' not in line:
            continue
        g = gc_re.search(line)
        if not g:
            continue
        node, at_ms, reduce, before, after, pause, incr = g.groups()
        s = steps.setdefault(step, {'mc': 0, 'reduce': 0, 'pause': 0.0, 'longest': 0.0, 'incr': 0.0})
        s['mc'] += 1
        s['reduce'] += 1 if reduce else 0
        s['pause'] += float(pause)
        s['longest'] = max(s['longest'], float(pause))
        s['incr'] += float(incr or 0)
        if float(pause) >= least:
            long_rows.append((step, node, int(at_ms), bool(reduce), float(before), float(after),
                              float(pause), float(incr or 0)))
print('step | mark-compacts | with reduce | atomic pauses ms | longest ms | incremental steps ms')
for name, s in steps.items():
    print(f"{name} | {s['mc']} | {s['reduce']} | {s['pause']:.0f} | {s['longest']:.0f} | {s['incr']:.0f}")
print()
print(f'mark-compacts with an atomic pause of {least:.0f} ms or more:')
print('step | node | ms since start | reduce | MB before -> after | pause ms | incremental ms')
for r in long_rows:
    print(f'{r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.1f} -> {r[5]:.1f} | {r[6]:.0f} | {r[7]:.0f}')
