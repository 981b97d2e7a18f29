import sys, re, collections
rounds = []; cur = None
for line in open(sys.argv[1]):
    if line.startswith('# round'): cur = {'who': '2'}; rounds.append(cur); continue
    if line.startswith('# 1 thread'): cur = {'who': '1'}; rounds.append(cur); continue
    p = line.split()
    if len(p) == 3 and cur is not None:
        cur[(p[0], p[1])] = float(p[2])
keys = []
for r in rounds:
    for k in r:
        if k != 'who' and k[1] not in keys: keys.append(k[1])
order = ['fused_fwd', 'fused_bwd', 'fused_fwd_bwd']
keys.sort(key=lambda k: (['4096x64','2048x1024','512x4096','64x16384','3000x333','257x5000'].index(k.split('/')[1]), order.index(k.split('/')[0])))
print('| shape | level | candle, µs (2 thr) | PyTorch, µs (2 thr) | PyTorch / candle per round | 1 thread: candle / PyTorch µs, ratio |')
print('|---|---|---|---|---|---|')
for k in keys:
    two = [r for r in rounds if r['who'] == '2' and ('candle', k) in r and ('torch', k) in r]
    one = [r for r in rounds if r['who'] == '1' and ('candle', k) in r and ('torch', k) in r]
    c = [r[('candle', k)] for r in two]; t = [r[('torch', k)] for r in two]
    rat = ' / '.join(f"{r[('torch',k)]/r[('candle',k)]:.2f}" for r in two)
    o = ' '.join(f"{r[('candle',k)]:.0f} / {r[('torch',k)]:.0f}, {r[('torch',k)]/r[('candle',k)]:.2f}" for r in one)
    lvl, shape = k.split('/')
    print(f"| {shape} | {lvl.replace('fused_','')} | {min(c):.0f}–{max(c):.0f} | {min(t):.0f}–{max(t):.0f} | {rat} | {o} |")
