"""Names the samples a `perf record -a` run took in the deno binary's embedded V8 builtins,
which perf cannot name (the release binary is stripped). Builtin names and offsets come from
a V8 code log of any deno process of the same binary (`--v8-flags=--log-code,--logfile=F`),
whose builtins start at the mapping of the binary at file offset BLOB_OFFSET; perf's mmap
events give each process's mappings. Only the nodes' main threads (comm "deno", tid == pid).
python3 builtins.py PERF_DATA V8_LOG BLOB_RUNTIME_BASE_HEX BLOB_OFFSET_HEX"""
import bisect, collections, re, subprocess, sys
perf_data, v8log, blob_base, blob_off = sys.argv[1], sys.argv[2], int(sys.argv[3], 16), int(sys.argv[4], 16)
builtins = []
for line in open(v8log):
    if line.startswith("code-creation,Builtin,"):
        parts = line.rstrip("\n").split(",", 6)
        addr, size, name = int(parts[4], 16), int(parts[5]), parts[6]
        if blob_base <= addr < blob_base + (64 << 20):
            builtins.append((addr - blob_base, size, name))
builtins.sort()
starts = [b[0] for b in builtins]
out = subprocess.run(["perf", "script", "-i", perf_data, "--show-mmap-events", "-F", "comm,pid,tid,ip,dso"],
                     capture_output=True, text=True).stdout
maps = collections.defaultdict(list)  # pid -> [(start, end, pgoff)]
mm = re.compile(r"PERF_RECORD_MMAP2 (\d+)/\d+: \[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ 0x([0-9a-f]+) .*r-xp .*/deno/deno$")
counts = collections.Counter(); total = 0
for line in out.splitlines():
    m = mm.search(line)
    if m:
        pid, start, length, pgoff = int(m[1]), int(m[2], 16), int(m[3], 16), int(m[4], 16)
        maps[pid].append((start, start + length, pgoff)); continue
    if "PERF_RECORD" in line: continue
    f = line.split()
    if len(f) < 4 or f[0] != "deno": continue
    pid_tid = f[1]
    if "/" in pid_tid:
        pid, tid = (int(x) for x in pid_tid.split("/")); ip = int(f[2], 16); dso = f[3]
    else:
        continue
    if pid != tid: continue
    total += 1
    if "kernel" in dso: counts["[kernel]"] += 1; continue
    if "JIT" in dso or "perf-" in dso: counts["[JIT code]"] += 1; continue
    if "deno/deno" not in dso: counts[dso] += 1; continue
    off = None
    for s, e, pg in maps.get(pid, []):
        if s <= ip < e: off = ip - s + pg; break
    if off is None: counts["deno: unmapped"] += 1; continue
    rel = off - blob_off
    i = bisect.bisect_right(starts, rel) - 1
    if rel >= 0 and i >= 0 and rel < builtins[i][0] + builtins[i][1]:
        counts["builtin " + builtins[i][2]] += 1
    else:
        counts["deno native (Rust, V8 C++)"] += 1
print(f"{total} samples on the nodes' main threads")
for k, v in counts.most_common(60):
    print(f"{v/total*100:6.2f} %  {k}")
