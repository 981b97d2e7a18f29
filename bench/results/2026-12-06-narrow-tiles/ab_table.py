#!/usr/bin/env python3
"""The harness's backward + parameter reduce (us) per shape of several `--bench-only` logs side by
side, the first log's time over each other's: ab_table.py NAME=LOG [NAME=LOG ...]. A name given
several logs (rounds) gets their median."""
import re
import statistics
import sys

LINE = re.compile(r"^bench (\S+)\s+(\d+x\d+)\s.*\| bwd (\S+).*\| bwd\+reduce\s+([\d.]+) us")

runs = {}
for arg in sys.argv[1:]:
    name, path = arg.split("=", 1)
    for line in open(path):
        m = LINE.match(line)
        if m:
            dtype, shape, tier, us = m.groups()
            runs.setdefault(name, {}).setdefault((dtype, shape), []).append((float(us), tier))
names = list(runs)
print("| dtype | shape | " + " | ".join(f"{n} us (tier)" for n in names) + " | "
      + " | ".join(f"{names[0]}/{n}" for n in names[1:]) + " |")
print("|" + "---|" * (2 + 2 * len(names) - 1))
for key in runs[names[0]]:
    cells, times = [], []
    for n in names:
        got = runs[n].get(key)
        if not got:
            cells.append("-")
            times.append(None)
            continue
        us = statistics.median(u for u, _ in got)
        cells.append(f"{us:.1f} ({got[0][1]})")
        times.append(us)
    ratios = [f"{times[0] / t:.2f}" if t and times[0] else "-" for t in times[1:]]
    print(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
