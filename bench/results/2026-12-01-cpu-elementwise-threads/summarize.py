import re,sys,collections
rounds=[];cur=None
d=collections.defaultdict(lambda: collections.defaultdict(dict))  # d[(shape,level)][cfg][round]=us
r=0
for line in open(sys.argv[1]):
    if line.startswith("## round"): r=int(line.split()[2]); continue
    p=line.split()
    if not p or p[0].startswith("##"): continue
    if p[0]=="torch":
        shape,level,us=p[1],p[2],float(p[3]); d[(shape,level)]["torch"][r]=us; continue
    cfg,name,val,unit=p[0],p[1],float(p[2]),p[3]
    _,bench,shape=name.split("/")
    us=val*(1000 if unit=="ms" else 1)
    level={"fused_fwd":"fwd","fused_bwd":"bwd","fused_fwd_bwd":"fwd_bwd","mul":"mul"}[bench]
    d[(shape,level)][cfg][r]=us
def rng(v): 
    v=sorted(v.values()); 
    return f"{v[0]:.0f}–{v[-1]:.0f}" if len(v)>1 else f"{v[0]:.0f}"
print("| shape | level | before (4b7bed3) | after | after, in a pool | PyTorch | PyTorch / after in a pool, per round |")
print("|---|---|---|---|---|---|---|")
shapes=[]
for k in d:
    if k[0] not in shapes: shapes.append(k[0])
for s in shapes:
    for lv in ["fwd","bwd","fwd_bwd","mul"]:
        e=d.get((s,lv))
        if not e: continue
        t=e.get("torch",{})
        ratio=" / ".join(f"{t[r]/e['new_pool'][r]:.2f}" for r in sorted(e['new_pool']) if r in t)
        print(f"| {s} | {lv} | {rng(e['old'])} | {rng(e['new'])} | {rng(e['new_pool'])} | {rng(t) if t else '—'} | {ratio or '—'} |")
