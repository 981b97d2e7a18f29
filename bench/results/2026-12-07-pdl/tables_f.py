#!/usr/bin/env python3
"""Call F: backward + reduce with the shipped launch and with each variant (PDL, the reduce folded
into the backward), from the harness's `pdl` and `fused` lines (each: plain and variant times of
two alternated rounds). Prints a markdown table per variant: the medians of the two rounds and
the variant's time over the plain one.    tables_f.py callF > tables-callF.md"""
import re
import statistics
import sys
from pathlib import Path

LINE = re.compile(r"^(pdl|fused)\s+(\S+)\s+(\d+)x(\d+)\s+bwd\s+(\S+)\s+grid\s+(\d+)\s+\|\s+bwd\+reduce\s+([\d.]+)\s+([\d.]+) us"
                  r"\s+\|\s+(?:pdl|fused)\s+([\d.]+)\s+([\d.]+) us")
rows = {"pdl": [], "fused": []}
for f in sorted(Path(sys.argv[1]).glob("bench-*.txt")):
    for line in f.read_text().splitlines():
        m = LINE.match(line)
        if m:
            plain = statistics.median([float(m[7]), float(m[8])])
            var = statistics.median([float(m[9]), float(m[10])])
            rows[m[1]].append((m[2], int(m[4]), int(m[3]), m[5], int(m[6]), plain, var))
for kind, title in (("pdl", "reduce launched as a PDL dependent (h_pdl)"),
                    ("fused", "reduce folded into the backward (h_fus)")):
    if not rows[kind]:
        continue
    print(f"\n### {title}\n")
    print("| dtype | cols | rows | backward tier | parts | bwd+reduce µs | variant µs | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for d, c, r, tier, g, a, b in sorted(rows[kind]):
        print(f"| {d} | {c} | {r} | {tier} | {g} | {a:.1f} | {b:.1f} | {b / a:.3f} |")
