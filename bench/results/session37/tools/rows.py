# Prints the figures this session's tables quote from sweep rows (hookd bench --json) or
# bench replication JSON files. Usage: python3 rows.py FILE...
import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f))
    name = f.split('/')[-1]
    if isinstance(d, list):
        for r in d:
            cores = round(sum(v for k, v in r['cpu_cores'].items() if k.startswith('n')), 2)
            print(f"{name} rate {r['rate']} loss {r['loss']}: offered {r['offered']} accepted {r['accepted']} "
                  f"lost {r['lost']} p50 {r['p50_ms']} p99 {r['p99_ms']} cpu_ms/job {r['cpu_ms_per_job']} "
                  f"datagrams {r['datagrams_per_job']} fsyncs {r['fsyncs_per_job']} wakeups {r['wakeups_per_job']} "
                  f"node_cores {cores} goodput {r['goodput_per_s']} refusal_p99 {r['refusal_p99_ms']} "
                  f"wal_fs {r.get('wal_fs', '(not recorded)')}")
    else:
        fx, mx = d['fixed_rate'], d['max_rate']
        print(f"{name}: commits/s {d['commits_per_s']} p50 {d['p50_ms']} p99 {d['p99_ms']} "
              f"fixed-rate cpu_us/commit {fx['cpu_us_per_commit_all_processes']} datagrams {fx['datagrams_per_commit']} "
              f"fsyncs {fx['fsyncs_per_commit']} | max-rate cpu_us/commit {mx['cpu_us_per_commit_all_processes']}")
