#!/usr/bin/env python3
"""Table of the kernel harness's `--sweep` outputs: per dtype and width, the host's backward
tier (the harness's `bench` line) and the fastest shipped, pair (`sq`) and prefetch (`p`)
tiers, kernel alone, best of the rounds.

    sweep_table.py callN/sweep-*.txt
"""
import collections
import re
import sys

times = collections.defaultdict(list)
host = {}
SWEEP = re.compile(r"sweep (\S+)\s+(\d+)x(\d+)\s+bwd (\S+)\s+grid\s+\d+ smem\s+\d+\s+([\d.]+) us")
BENCH = re.compile(r"bench (\S+)\s+(\d+)x(\d+)\s+fwd .*\| bwd (\S+)\s+grid\s+\d+\s+([\d.]+) us")
for path in sys.argv[1:]:
    for line in open(path):
        if m := SWEEP.match(line):
            times[(m[1], int(m[2]), int(m[3]), m[4])].append(float(m[5]))
        elif m := BENCH.match(line):
            host[(m[1], int(m[2]), int(m[3]))] = m[4]
            times[(m[1], int(m[2]), int(m[3]), m[4])].append(float(m[5]))


def kind(tier):
    if tier.endswith("sq"):
        return "pairs"
    if tier.endswith("p") and tier != "l512v4sp":
        return "prefetch"
    return "shipped"


print("| dtype | shape | host tier µs | best shipped | best pairs (`sq`) | best prefetch (`p`) |")
print("|---|---|---|---|---|---|")
for dt, r, c in sorted({k[:3] for k in times}, key=lambda k: (k[0], k[2])):
    tiers = {k[3]: min(v) for k, v in times.items() if k[:3] == (dt, r, c)}
    h = host.get((dt, r, c))
    cells = [f"{h} {tiers[h]:.1f}" if h in tiers else "-"]
    for want in ("shipped", "pairs", "prefetch"):
        ts = [t for t in tiers if kind(t) == want]
        if not ts:
            cells.append("-")
            continue
        b = min(ts, key=tiers.get)
        rel = f" ({tiers[b] / tiers[h]:.3f}×)" if h in tiers else ""
        cells.append(f"{b} {tiers[b]:.1f}{rel}")
    print(f"| {dt} | {r}x{c} | " + " | ".join(cells) + " |")
