#!/usr/bin/env python3
"""Call C: the host's backward (+ parameter reduce) with h_ship and h_mb0, median of the rounds
per shape, and h_mb0's time over h_ship's.  compare_c.py callC"""
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

BENCH = re.compile(r"^bench (\S+)\s+(\d+)x(\d+)\s+fwd .*\| bwd (\S+)\s+grid\s+\d+\s+([\d.]+) us.*"
                   r"\| bwd\+reduce\s+([\d.]+) us")
t = defaultdict(list)
tier = {}
for f in Path(sys.argv[1]).glob("bench-h_*.txt"):
    h = f.name.split("-")[1]
    for line in f.read_text().splitlines():
        m = BENCH.match(line)
        if m:
            k = (m[1], int(m[3]), int(m[2]))
            t[k + (h,)].append(float(m[6]))
            tier[k] = m[4]
print("| dtype | cols | rows | backward tier | h_ship µs | h_mb0 µs | h_mb0 / h_ship |")
print("|---|---|---|---|---|---|---|")
for k in sorted(tier):
    a, b = t.get(k + ("h_ship",)), t.get(k + ("h_mb0",))
    if a and b:
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"| {k[0]} | {k[1]} | {k[2]} | {tier[k]} | {ma:.1f} | {mb:.1f} | {mb / ma:.3f} |")
