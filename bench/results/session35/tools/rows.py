# One line a step of `hookd bench --json` outputs: accepted, lost, refused, errors, p50/p99/worst,
# CPU a job, RSS and heap. `describe` is shared with ab_rows.py.
# Usage: python3 rows.py FILE.json ...
import json,sys

def describe(r):
    return ('acc %d lost %d rej %d err %d p50 %.1f p99 %.1f max %.0f cpu %.2f'
            % (r['accepted'], r['lost'], r['rejected'], r['errors'], r['p50_ms'], r['p99_ms'],
               r['max_ms'], r['cpu_ms_per_job']))

if __name__ == '__main__':
    for f in sys.argv[1:]:
        for r in json.load(open(f)):
            print(f.split('/')[-1], r['rate'], describe(r), 'rss', r['node_rss_mb'], 'heap',
                  r['node_heap_used_mb'])
