#!/usr/bin/env python3
"""Tables of call B (callB/ from callB.tgz): the size probe (ours from the kernel harness's bench
lines, PyTorch's kernels and the same-bytes copy from size_probe.py) and the forward candidates
(the harness's sweep lines, median of the rounds, each tier's time over the shipped choice's).

    tables.py callB > tables.md
"""
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

BENCH = re.compile(r"^bench (\S+)\s+(\d+)x(\d+)\s+fwd (\S+)\s+grid\s+\d+\s+([\d.]+) us\s+(\d+) GB/s \| bwd (\S+)"
                   r"\s+grid\s+\d+\s+[\d.]+ us\s+\d+ GB/s \| bwd\+reduce\s+([\d.]+) us\s+(\d+) GB/s")
SWEEP = re.compile(r"^sweep (\S+)\s+(\d+)x(\d+)\s+fwd (\S+)\s+([\d.]+) us\s+\d+ GB/s \| cap grid\s+\d+\s+([\d.]+) us")


def probe(d):
    ours = {}
    for f in sorted(d.glob("probe-*.txt")):
        if "torch" in f.name:
            continue
        for line in f.read_text().splitlines():
            m = BENCH.match(line)
            if m:
                dt, r, c = m[1], int(m[2]), int(m[3])
                ours[(dt, r, c)] = (m[4], float(m[6]), m[7], float(m[9]))
    print("## Size probe: share of a same-bytes copy at 32 MiB and at 4x the rows\n")
    print("| dtype | rows x cols | fwd tier | ours fwd | PyTorch fwd | bwd tier | ours bwd | PyTorch bwd |")
    print("|---|---|---|---|---|---|---|---|")
    for f in sorted(d.glob("probe-torch-*.txt")):
        for line in f.read_text().splitlines():
            p = line.replace("|", " ").split()
            if len(p) != 9 or not p[1].isdigit():
                continue
            dt, r, c = p[0], int(p[1]), int(p[2])
            tf, tfc, tb, tbc = float(p[4]), float(p[5]), float(p[7]), float(p[8])
            if (dt, r, c) not in ours:
                continue
            ft, of, bt, ob = ours[(dt, r, c)]
            print(f"| {dt} | {r}x{c} | {ft} | {of / tfc:.0%} | {tf / tfc:.0%} | {bt} | {ob / tbc:.0%} | {tb / tbc:.0%} |")


def sweep(d):
    times = defaultdict(list)  # (dt, r, c, tier, cap) -> us
    chosen = {}
    for f in sorted(d.glob("fwd-sweep-*.txt")):
        for line in f.read_text().splitlines():
            m = SWEEP.match(line)
            if m:
                k = (m[1], int(m[2]), int(m[3]))
                times[k + (m[4], "grid")].append(float(m[5]))
                times[k + (m[4], "cap")].append(float(m[6]))
            m = BENCH.match(line)
            if m:
                chosen[(m[1], int(m[2]), int(m[3]))] = m[4]
    med = {k: statistics.median(v) for k, v in times.items()}
    print("\n## Forward candidates: median µs over the rounds (grid: one block per row group; cap: "
          "resident blocks), the best three and the shipped choice\n")
    print("| dtype | rows x cols | shipped | best | 2nd | 3rd |")
    print("|---|---|---|---|---|---|")
    for k in sorted(chosen, key=lambda k: (k[0], k[2])):
        pts = sorted((v, t, g) for (dt, r, c, t, g), v in med.items() if (dt, r, c) == k)
        ship = chosen[k]
        base = med.get(k + (ship, "cap" if ship.endswith("p") else "grid"))
        if not pts or base is None:
            continue
        top = [f"{t} {g} {v:.1f} ({v / base:.2f})" for v, t, g in pts[:3]]
        print(f"| {k[0]} | {k[1]}x{k[2]} | {ship} {base:.1f} | " + " | ".join(top) + " |")


if __name__ == "__main__":
    d = Path(sys.argv[1])
    probe(d)
    sweep(d)
