#!/usr/bin/env python3
"""Per dtype, direction and width: the host's tier (the harness's `bench` line) and the five
fastest tiers of the harness's `--sweep` output, kernel alone, with the best one's time as a
ratio of the host's.

    table.py call1/sweep-*.txt
"""
import collections
import re
import sys

SWEEP = re.compile(r"sweep (\S+)\s+(\d+)x(\d+)\s+(fwd|bwd) (\S+?)\s.*?([\d.]+) us")
BENCH = re.compile(r"bench (\S+)\s+(\d+)x(\d+)\s+fwd (\S+).*?([\d.]+) us.*\| bwd (\S+)\s+grid\s+\d+\s+([\d.]+) us")
times = collections.defaultdict(lambda: collections.defaultdict(list))
host = {}
for path in sys.argv[1:]:
    direction = "bwd" if "bwd" in path else "fwd"
    for line in open(path):
        if (m := SWEEP.match(line)) and m[4] == direction:
            times[(m[1], direction, int(m[3]))][m[5]].append(float(m[6]))
        elif m := BENCH.match(line):
            tier, us = (m[4], m[5]) if direction == "fwd" else (m[6], m[7])
            host[(m[1], direction, int(m[3]))] = (tier, float(us))
print("| dtype | dir | cols | host tier, µs | fastest tiers, µs | best / host |")
print("|---|---|---|---|---|---|")
for key in sorted(times):
    best = sorted((min(v), t) for t, v in times[key].items())
    tier, us = host.get(key, ("?", float("nan")))
    top = ", ".join(f"{t} {v:.1f}" for v, t in best[:5])
    print(f"| {key[0]} | {key[1]} | {key[2]} | {tier} {us:.1f} | {top} | {best[0][0] / us:.3f} |")
