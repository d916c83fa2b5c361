"""Maglev and TurboFan compilations and deoptimisations per 5-s bucket, from V8 code logs
(`DENO_V8_FLAGS=--log-deopt,--log-code,--logfile=DIR/v8-%p.log,--no-logfile-per-isolate
deno task hookd bench --rates 800 --duration 20`). Code kinds in this V8: 10 interpreted,
11 baseline, 12 Maglev, 13 TurboFan. python3 tiers_timeline.py LOG…"""
import collections, sys
for path in sys.argv[1:]:
    ev = collections.Counter(); last = 0
    for line in open(path):
        p = line.split(",")
        if p[0] == "code-creation" and p[1] == "JS":
            t = int(p[3]) / 1e6; last = max(last, t); ev[(p[2], int(t // 5) * 5)] += 1
        elif p[0] == "code-deopt":
            t = int(p[1]) / 1e6; last = max(last, t); ev[("deopt", int(t // 5) * 5)] += 1
    print(path, f"(last event {last:.0f} s; buckets of 5 s from 0)")
    for kind, label in (("12", "maglev"), ("13", "turbofan"), ("deopt", "deopt")):
        print(f"  {label:9s}", [ev[(kind, b)] for b in range(0, int(last) + 5, 5)])
