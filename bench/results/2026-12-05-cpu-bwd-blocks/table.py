"""rounds.txt (rounds.sh) -> markdown: per bench and thread count, the medians (µs) of the pin
before (base), this change (new) and PyTorch over the rounds, and PyTorch / new per round."""
import sys

rounds = []
for line in open(sys.argv[1]):
    if line.startswith('# '):
        rounds.append({'threads': 1 if '1 thread' in line else 2})
    elif len(p := line.split()) == 3 and rounds:
        rounds[-1][(p[0], p[1])] = float(p[2])

span = lambda v: f"{min(v):.0f}–{max(v):.0f}"
print('| threads | bench | base, µs | new, µs | PyTorch, µs | PyTorch / new per round |')
print('|---|---|---|---|---|---|')
for threads in (2, 1):
    rs = [r for r in rounds if r['threads'] == threads]
    benches = dict.fromkeys(k for r in rs for key in r if key != 'threads' for who, k in [key] if who == 'new')
    for k in benches:
        have = [r for r in rs if ('new', k) in r and ('base', k) in r and ('torch', k) in r]
        if not have:
            continue
        col = lambda who: span([r[(who, k)] for r in have])
        ratio = ' / '.join(f"{r[('torch', k)] / r[('new', k)]:.2f}" for r in have)
        print(f"| {threads} | {k} | {col('base')} | {col('new')} | {col('torch')} | {ratio} |")
