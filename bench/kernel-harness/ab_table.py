#!/usr/bin/env python3
"""A/B table of kernel harness builds: the median over rounds of the backward kernel (and kernel +
parameter reduce) per shape and build, from the harness's `bench` lines saved by a device call
as <folder>/bench-<build>-<round>.txt (`ln_harness --bench-only --shapes ...`); the first build
is the base the others are divided by.
  python3 bench/kernel-harness/ab_table.py <folder> <base> <build> [<build> ...]"""
import re
import statistics
import sys
from pathlib import Path

LINE = re.compile(r"^bench (\S+)\s+(\d+x\d+)\s+fwd.*\| bwd (\S+(?:\s*-words)?)\s+grid\s+(\d+)\s+"
                  r"([\d.]+) us.*bwd\+reduce\s+([\d.]+) us")


def load(folder, variant):
    runs = {}
    for f in sorted(Path(folder).glob(f"bench-{variant}-*.txt")):
        for line in f.read_text().splitlines():
            m = LINE.match(line)
            if m:
                runs.setdefault((m[1], m[2]), []).append((float(m[5]), float(m[6]), m[3]))
    return runs


def main():
    folder, base, *others = sys.argv[1:]
    data = {v: load(folder, v) for v in [base, *others]}
    med = lambda rs, i: statistics.median(r[i] for r in rs)
    head = "| dtype | shape | instance | " + " | ".join(f"{v} µs" for v in data)
    head += " | " + " | ".join(f"{v}/{base}" for v in others) + f" | {base} +reduce | "
    head += " | ".join(f"{v} +reduce" for v in others) + " |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    order = lambda k: (k[0], int(k[1].split("x")[1]))
    for key in sorted(data[base], key=order):
        ks = [med(data[v][key], 0) for v in data]
        rs = [med(data[v][key], 1) for v in data]
        cells = [key[0], key[1], data[base][key][0][2]]
        cells += [f"{k:.1f}" for k in ks] + [f"{k / ks[0]:.3f}" for k in ks[1:]]
        cells += [f"{r:.1f}" for r in rs]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
