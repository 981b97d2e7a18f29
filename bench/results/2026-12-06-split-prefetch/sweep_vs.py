#!/usr/bin/env python3
"""Our op times of a fine sweep (sweep.csv) against the mean of earlier sweeps, per point:
  python3 sweep_vs.py NEW.csv OLD.csv [OLD.csv ...] (call*/sweep-vs-12-05.md)"""
import csv, sys, statistics
def load(p):
    return {(r['dtype'], r['level'], int(r['cols'])): float(r['ours_us']) for r in csv.DictReader(open(p))}
new = load(sys.argv[1]); olds = [load(p) for p in sys.argv[2:]]
rows = []
for k in sorted(new, key=lambda k: (k[0], k[1], k[2])):
    o = [d[k] for d in olds if k in d]
    if not o: continue
    rows.append((k, new[k] / statistics.mean(o), min(o), max(o), new[k]))
for lvl in ('fwd', 'bwd'):
    for dt in ('f32', 'bf16', 'f16'):
        rs = [r for r in rows if r[0][0] == dt and r[0][1] == lvl]
        print(dt, lvl, 'median new/old %.3f' % statistics.median(r[1] for r in rs),
              'min %.3f max %.3f' % (min(r[1] for r in rs), max(r[1] for r in rs)))
print('| dtype | dir | hidden | old µs (12-05 calls 3, 4) | new µs | new/old |')
print('|---|---|---|---|---|---|')
for k, ratio, lo, hi, n in rows:
    if k[1] == 'bwd' and (k[2] >= 16384 if True else False):
        print(f'| {k[0]} | {k[1]} | {k[2]} | {lo:.1f}–{hi:.1f} | {n:.1f} | {ratio:.3f} |')
