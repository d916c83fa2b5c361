import json,sys,glob,collections
self_=collections.Counter(); total=0
for f in glob.glob(sys.argv[1]+'/*.heapprofile'):
    p=json.load(open(f))
    # sampling heap profile: head tree with selfSize; samples list
    def walk(n, stack):
        global total
        cf=n['callFrame']; url=cf['url'].split('/src/')[-1] if '/src/' in cf['url'] else cf['url'].split('/')[-1]
        name=f"{cf['functionName'] or '(anon)'} {url}:{cf['lineNumber']+1}"
        s=n.get('selfSize',0)
        # attribute to nearest src frame too
        src=next((x for x in reversed(stack+[name]) if '.ts:' in x and 'ext:' not in x), name)
        self_[(name,src if src!=name else '')]+=s; total+=s
        for c in n.get('children',[]): walk(c, stack+[name])
    walk(p['head'],[])
print('total MB', total/1e6)
for (k,src),v in self_.most_common(int(sys.argv[2]) if len(sys.argv)>2 else 50): print(f'{v/total*100:5.1f}%  {k}   <- {src}')
