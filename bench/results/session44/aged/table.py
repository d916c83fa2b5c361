# Prints the aged runs' rows as a markdown table: `python3 bench/results/session44/aged/table.py FILE…`
import json
import sys

print("| run | step | accepted | lost | p50 ms | p99 ms | worst ms | CPU ms a job | V8 workers, cores (5 nodes) | heap used a node | external a node | RSS a node |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for f in sys.argv[1:]:
    for r in json.load(open(f)):
        print(
            f"| {f.split('/')[-1].removesuffix('.json')} | {r['rate']}/s | {r['accepted']:,} of {r['offered']:,} | {r['lost']} "
            f"| {r['p50_ms']:.2f} | {r['p99_ms']:.1f} | {r['max_ms']:.0f} | {r['cpu_ms_per_job']:.3f} "
            f"| {r['node_cpu_cores_by_thread']['v8_workers']:.3f} | {r['node_heap_used_mb']:.0f} MB "
            f"| {r['node_external_mb']:.0f} MB | {r['node_rss_mb']:.0f} MB |"
        )
