import sys,csv
rows=list(csv.DictReader(open(sys.argv[1]),delimiter='\t'))
t0=float(rows[0]['scheduled_ms'])
lat=[(float(r['scheduled_ms'])-t0, float(r['received_ms'])-float(r['scheduled_ms']), float(r['acked_ms'])-float(r['scheduled_ms'])) for r in rows if r['received_ms']]
lat.sort()
thr=float(sys.argv[2]) if len(sys.argv)>2 else 10
slow=[x for x in lat if x[1]>thr]
print(len(lat),'jobs',len(slow),'over',thr)
# cluster slow jobs in time
clusters=[];
for t,l,a in slow:
    if clusters and t-clusters[-1][1]<50: clusters[-1][1]=t; clusters[-1][2]+=1; clusters[-1][3]=max(clusters[-1][3],l)
    else: clusters.append([t,t,1,l])
for c in clusters: print(f"at {c[0]:8.0f}-{c[1]:8.0f} ms: {c[2]:3d} jobs, max {c[3]:6.1f}")
