import re,sys,collections
c=collections.Counter(); lazy=collections.Counter()
pending={}
for line in open(sys.argv[1],errors='replace'):
    m=re.search(r'\[(n\d)\] \[bailout \(kind: (deopt-\w+), reason: (.*?)\): begin. deoptimizing 0x\w+ <JSFunction (\S*)',line)
    if m: pending[m.group(1)]=(m.group(2),m.group(3),m.group(4)); continue
    m=re.search(r'\[(n\d)\]\s+;;; deoptimize at <file:///tmp/\w+/(\S+?)>',line)
    if m and m.group(1) in pending:
        k,r,f=pending.pop(m.group(1)); c[(r,m.group(2),f,k)]+=1
    m=re.search(r'marking dependent code .*?SharedFunctionInfo ?(\S*)>\).*reason: (.*)\]',line)
    if m: lazy[(m.group(2),m.group(1))]+=1
print('eager/with position:',sum(c.values()))
for k,v in c.most_common(60): print(v,k)
print('lazy marks:',sum(lazy.values()))
for k,v in lazy.most_common(30): print(v,k)
