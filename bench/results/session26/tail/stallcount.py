import csv,sys
for f in sys.argv[1:]:
    rows=list(csv.DictReader(open(f),delimiter='\t'))
    rows.sort(key=lambda r: float(r['scheduled_ms']))
    warm=200 if 'wu2' in f else 500
    out=[]; last=-100
    for i,r in enumerate(rows):
        if not r['received_ms']: continue
        l=float(r['received_ms'])-float(r['scheduled_ms'])
        if l>20:
            if i-last>10: out.append(i+warm)
            last=i
    print(f.split('/')[-1], out)
