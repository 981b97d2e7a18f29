"""rounds.txt -> markdown: per bench, base / new / PyTorch medians (µs) over the two 2-thread
rounds, PyTorch / new per round, and the one-thread round (new / PyTorch, ratio)."""
import sys, collections
rounds = []
for line in open(sys.argv[1]):
    if line.startswith('# '):
        rounds.append({'who': '1' if '1 thread' in line else '2'})
        continue
    p = line.split()
    if len(p) == 3 and rounds:
        rounds[-1][(p[0], p[1])] = float(p[2])
two = [r for r in rounds if r['who'] == '2']
one = [r for r in rounds if r['who'] == '1']
dtypes = ['f32', 'bf16', 'f16']
shapes = ['4096x64', '2048x1024', '512x4096', '64x16384', '3000x333', '257x5000']
levels = ['fused_fwd', 'fused_bwd', 'fused_fwd_bwd']
span = lambda v: f"{min(v):.0f}–{max(v):.0f}"
print('| dtype | shape | level | pin 0059 before, µs | now, µs | PyTorch, µs | PyTorch / now per round | 1 thread: now / PyTorch µs, ratio |')
print('|---|---|---|---|---|---|---|---|')
for dt in dtypes:
    for sh in shapes:
        for lv in levels:
            k = f"{lv}/{sh}" + ('' if dt == 'f32' else f"-{dt}")
            rs = [r for r in two if ('new', k) in r and ('torch', k) in r]
            if not rs:
                continue
            base = [r[('base', k)] for r in rs if ('base', k) in r]
            new = [r[('new', k)] for r in rs]
            tor = [r[('torch', k)] for r in rs]
            rat = ' / '.join(f"{r[('torch', k)] / r[('new', k)]:.2f}" for r in rs)
            o = ' '.join(f"{r[('new', k)]:.0f} / {r[('torch', k)]:.0f}, {r[('torch', k)] / r[('new', k)]:.2f}"
                         for r in one if ('new', k) in r and ('torch', k) in r)
            print(f"| {dt} | {sh} | {lv.replace('fused_', '')} | {span(base)} | {span(new)} | {span(tor)} | {rat} | {o} |")
