# Samples every hookd process's CPU by thread kind every 50 ms: epoch_ms, pid, role, main, v8w, other (cumulative ticks)
import os,time,sys
out=open(sys.argv[1],'w'); dur=float(sys.argv[2])
end=time.time()+dur
def procs():
    res=[]
    for p in os.listdir('/proc'):
        if not p.isdigit(): continue
        try: cmd=open(f'/proc/{p}/cmdline','rb').read().split(b'\0')
        except: continue
        if any(c.endswith(b'main.ts') for c in cmd):
            args=[c.decode() for c in cmd]
            i=[j for j,c in enumerate(args) if c.endswith('main.ts')][0]
            role=' '.join(args[i+1:i+3])
            res.append((p,role))
    return res
known={}
while time.time()<end:
    now=time.time()*1000
    if int(now/1000)%2==0 or not known: known=dict(procs())
    for p,role in list(known.items()):
        agg={'main':0,'v8w':0,'other':0}
        try:
            for t in os.listdir(f'/proc/{p}/task'):
                s=open(f'/proc/{p}/task/{t}/stat').read()
                name=s[s.index('(')+1:s.rindex(')')]; f=s[s.rindex(')')+2:].split()
                ticks=int(f[11])+int(f[12])
                k='main' if t==p else ('v8w' if name.startswith('V8 ') else 'other')
                agg[k]+=ticks
        except FileNotFoundError: continue
        out.write(f"{now:.0f}\t{p}\t{role}\t{agg['main']}\t{agg['v8w']}\t{agg['other']}\n")
    time.sleep(0.05)
