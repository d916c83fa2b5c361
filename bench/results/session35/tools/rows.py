# One line a step of `hookd bench --json` outputs: accepted, lost, refused, errors, p50/p99/worst, CPU a job, RSS and heap.
# Usage: python3 rows.py FILE.json ...
import json,sys
for f in sys.argv[1:]:
    for r in json.load(open(f)):
        print(f.split('/')[-1], r['rate'], 'acc',r['accepted'],'lost',r['lost'],'rej',r['rejected'],'err',r['errors'],
              'p50 %.1f p99 %.1f max %.0f'%(r['p50_ms'],r['p99_ms'],r['max_ms']),'cpu %.2f'%r['cpu_ms_per_job'],
              'rss',r['node_rss_mb'],'heap',r['node_heap_used_mb'])
