# One line a run of an A/B directory (files ARM.ROUND.json with ARM.ROUND.err.gz or .err and
# ARM.ROUND.host beside them, as session 32's runs_table.py reads): the host loop; from the
# `--trace-gc-nvp` lines of the five nodes, the mark-compacts (count, summed and longest pause)
# and the heap each node ended with (object bytes after its last GC of any kind, summed over the
# nodes); then per step p99, max and CPU ms a job (all processes).
# Usage: python3 gc_table.py DIR > DIR/gc_table.txt
import glob, gzip, json, os, re, sys

d = sys.argv[1]
runs = []
for f in glob.glob(os.path.join(d, '*.json')):
    name = os.path.basename(f)[:-5]
    arm, r = name.rsplit('.', 1)
    rows = json.loads(open(f).read().strip().splitlines()[-1])
    errf = os.path.join(d, name + '.err.gz')
    err = gzip.open(errf, 'rt', errors='replace').read() if os.path.exists(errf) else open(
        os.path.join(d, name + '.err'), errors='replace').read()
    host = open(os.path.join(d, name + '.host')).read().split()[1]
    pauses, last = [], {}
    for line in err.splitlines():
        # Regexes, not a JSON parse: the nodes' stderr lines can arrive cut or interleaved.
        node = re.search(r'\[(n\d)\]', line)
        if node is None or 'GC: {' not in line:
            continue
        if '"gc":"mc"' in line:
            pause = re.search(r'"pause":([\d.]+)', line)
            pauses.append(float(pause.group(1)) if pause else 0.0)
        size = re.search(r'"end_object_size":(\d+)', line)
        if size:
            last[node.group(1)] = int(size.group(1))
    runs.append((int(r), arm, host, pauses, sum(last.values()) / 1e6, rows))
print('round | arm | host loop ms | major GCs | their pauses summed, ms | longest, ms | '
      'heap at the end, MB (five nodes) | p99 ms by step | max ms by step | CPU ms a job by step')
for r, arm, host, pauses, heap, rows in sorted(runs):
    col = lambda f: ' / '.join(f(x) for x in rows)
    print(r, '|', arm, '|', host, '|', len(pauses), '|', round(sum(pauses)), '|',
          round(max(pauses, default=0)), '|', round(heap, 1), '|',
          col(lambda x: str(x['p99_ms'])), '|', col(lambda x: str(round(x['max_ms']))), '|',
          col(lambda x: str(x['cpu_ms_per_job'])))
