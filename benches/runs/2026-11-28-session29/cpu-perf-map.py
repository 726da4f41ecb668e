import re,collections,sys
asm=open('/tmp/cpu29dump3/0001-8-asm.s').read().splitlines()
# asm instruction lines with their current label
ins=[];label='entry'
started=False
for l in asm:
    s=l.strip()
    if s.startswith('kiln_kernel_host:'): started=True; continue
    if not started: continue
    if s.startswith('.Lfunc_end'): break
    m=re.match(r'^(\.LBB\d+_\d+):',s)
    if m: label=m.group(1); continue
    if not s or s.startswith('.') or s.startswith('#'): continue
    ins.append((label,s))
dis=[]
for l in open('/tmp/cpu29dump3/k.dis'):
    m=re.match(r'^\s+([0-9a-f]+):\s+(\S.*)$',l)
    if m: dis.append(int(m.group(1),16))
print(len(ins),len(dis),file=sys.stderr)
n=min(len(ins),len(dis))
starts=set(dis[:n])
size=dis[n-1]+16
ips=[]
other=0
for l in open('/tmp/cpu29.ips'):
    a,s=l.split()[:2]
    if s=='[unknown]': ips.append(int(a,16))
    else: other+=1
# find base
cands=collections.Counter()
hot=collections.Counter(ips).most_common(50)
for ip,_ in hot:
    for d in dis[:n]:
        cands[ip-d]+=1
best=None;bs=-1
for base,_ in cands.most_common(200):
    sc=sum(1 for ip in ips if (ip-base) in starts)
    if sc>bs: bs,best=sc,base
print('base %x, on starts %d of %d, other %d'%(best,bs,len(ips),other),file=sys.stderr)
addr2label={}
for i in range(n): addr2label[dis[i]]=(ins[i][0],i)
cnt=collections.Counter();lines=collections.Counter()
for ip in ips:
    off=ip-best
    if off in addr2label:
        lab,i=addr2label[off]; cnt[lab]+=1; lines[i]+=1
    else: cnt['outside']+=1
tot=len(ips)+other
for lab,c in cnt.most_common(): print('%6.2f%% %s'%(100*c/tot,lab))
print('%6.2f%% other dsos'%(100*other/tot))
if len(sys.argv)>1:
    for i,c in lines.most_common(int(sys.argv[1])): print(c, ins[i])
