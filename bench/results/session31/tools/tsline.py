import sys,time
out=open(sys.argv[1],'w')
for line in sys.stdin:
    out.write(f"{time.time()*1000:.0f}\t{line}"); out.flush()
