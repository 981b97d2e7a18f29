#!/usr/bin/env python3
"""Calls C and E: the host's backward (+ parameter reduce) and the reduce alone with h_ship and
the variant (h_mb0 in call C, h_red in call E), median of the rounds per shape, and the
variant's time over h_ship's.    compare_c.py callC    compare_c.py callE"""
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

BENCH = re.compile(r"^bench (\S+)\s+(\d+)x(\d+)\s+fwd .*\| bwd (\S+)\s+grid\s+(\d+)\s+([\d.]+) us.*"
                   r"\| bwd\+reduce\s+([\d.]+) us.*\| reduce\s+([\d.]+) us")
t = defaultdict(list)
tier = {}
for f in Path(sys.argv[1]).glob("bench-h_*.txt"):
    h = f.name.split("-")[1]
    for line in f.read_text().splitlines():
        m = BENCH.match(line)
        if m:
            k = (m[1], int(m[3]), int(m[2]))
            t[k + (h, "all")].append(float(m[7]))
            t[k + (h, "red")].append(float(m[8]))
            tier[k] = f"{m[4]} ({m[5]} parts)"
var = sorted({k[3] for k in t} - {"h_ship"})[0]
med = {k: statistics.median(v) for k, v in t.items()}
print(f"| dtype | cols | rows | backward tier | bwd+reduce h_ship / {var} µs | ratio "
      f"| reduce h_ship / {var} µs | ratio |")
print("|---|---|---|---|---|---|---|---|")
for k in sorted(tier):
    a, b = med.get(k + ("h_ship", "all")), med.get(k + (var, "all"))
    ra, rb = med.get(k + ("h_ship", "red")), med.get(k + (var, "red"))
    if a and b:
        print(f"| {k[0]} | {k[1]} | {k[2]} | {tier[k]} | {a:.1f} / {b:.1f} | {b / a:.3f} "
              f"| {ra:.1f} / {rb:.1f} | {rb / ra:.2f} |")
