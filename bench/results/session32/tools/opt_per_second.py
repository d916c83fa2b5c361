# TurboFan and Maglev compilations (all five nodes, --trace-opt) per second of a sweep step, by the
# step's own progress lines in the sweep's stderr. Usage: python3 opt_per_second.py RUN.err
import re,sys,collections
sec='warm'; cnt=collections.Counter()
for line in open(sys.argv[1],errors='replace'):
    m=re.search(r'rate \d+: (\d+) s offered',line)
    if m: sec=int(m.group(1)); continue
    if 'warm-up: 100 jobs/s' in line: sec='warm'
    m=re.search(r'completed (?:compiling|optimizing).*\(target (\w+)\)',line)
    if m: cnt[(sec,m.group(1))]+=1
print('second turbofan maglev')
for k in ['warm']+list(range(1,21)):
    print(k, cnt.get((k,'TURBOFAN'),0)+cnt.get((k,'TURBOFAN_JS'),0), cnt.get((k,'MAGLEV'),0))
