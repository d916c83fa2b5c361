import json,sys,glob
for f in sorted(glob.glob(sys.argv[1])):
    for r in json.load(open(f)):
        print(f"{f:24} {r['nodes_kind']:8} rate {r['rate']:5} acc {r['accepted']:6}/{r['offered']:6} p50 {r['p50_ms']} p99 {r['p99_ms']} cpu/job {r['cpu_ms_per_job']} dg {r['datagrams_per_job']} fs {r['fsyncs_per_job']} wk {r['wakeups_per_job']} lost {r['lost']} refused {r['rejected']} err {r['errors']} cores {r['cpu_cores']}")
