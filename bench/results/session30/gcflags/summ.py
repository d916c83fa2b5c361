import json,sys,glob
# One line a `bench replication --json` run: python3 summ.py 'DIR/*.json'
for f in sorted(glob.glob(sys.argv[1]), key=lambda f:(f.split('.')[-2], f)):
    try: d=json.loads([l for l in open(f) if l.startswith('{')][-1])
    except Exception as e: print(f, 'unreadable', e); continue
    m=d['max_rate']
    print(f.split('/')[-1].ljust(18), 'commits/s', d['commits_per_s'], 'cpu us/commit', m['cpu_us_per_commit_all_processes'],
          'fs', m['fsyncs_per_commit'], 'dg', m['datagrams_out_per_commit'], 'p50', d['p50_ms'], 'p99', d['p99_ms'], 'lost', d['lost'])
