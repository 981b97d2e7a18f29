#!/usr/bin/env python3
"""Table of a call's harness benches (bench-<variant>-<round>.txt) beside PyTorch (torch.txt):
per bf16 shape, the forward and the backward with its reduce (µs, the range over rounds) of each
variant, PyTorch's kernels (TORCH: a torch.txt, from call 1), and PyTorch's time / ours.
Usage: table.py CALL_DIR TORCH VARIANT..."""
import glob
import re
import sys
from collections import defaultdict

LINE = re.compile(r"^bench (\w+)\s+(\d+x\d+)\s+fwd (\S+)\s+(-words)?\s*grid\s+\d+\s+([\d.]+) us.*"
                  r"\| bwd (\S+)\s+(-words)?\s*grid\s+\d+\s+[\d.]+ us.*\| bwd\+reduce\s+([\d.]+) us")
TORCH = re.compile(r"^torch (\w+) (\d+x\d+) fwd ([\d.]+) us bwd ([\d.]+) us")


def rng(v):
    return f"{min(v):.1f}" if min(v) == max(v) else f"{min(v):.1f}–{max(v):.1f}"


def main():
    d, torch_file, variants = sys.argv[1], sys.argv[2], sys.argv[3:]
    res = defaultdict(lambda: defaultdict(list))
    tiers = {}
    order = []
    for v in variants:
        for f in sorted(glob.glob(f"{d}/bench-{v}-*.txt")):
            for line in open(f):
                m = LINE.match(line)
                if not m or m.group(1) != "bf16":
                    continue
                shape = m.group(2)
                if shape not in order:
                    order.append(shape)
                tiers[shape] = f"{m.group(3)}{m.group(4) or ''} / {m.group(6)}{m.group(7) or ''}"
                res[shape][(v, "fwd")].append(float(m.group(5)))
                res[shape][(v, "bwd")].append(float(m.group(8)))
    torch = {}
    for line in open(torch_file):
        m = TORCH.match(line)
        if m and m.group(1) == "bf16":
            torch[m.group(2)] = (float(m.group(3)), float(m.group(4)))
    head = ["shape", "tiers"] + [f"fwd {v}" for v in variants] + ["fwd torch"]
    head += [f"bwd {v}" for v in variants] + ["bwd torch"] + [f"bwd torch/{v}" for v in variants]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for s in order:
        t = torch.get(s, (float("nan"), float("nan")))
        row = [s, tiers[s]] + [rng(res[s][(v, "fwd")]) for v in variants] + [f"{t[0]:.1f}"]
        row += [rng(res[s][(v, "bwd")]) for v in variants] + [f"{t[1]:.1f}"]
        row += [f"{t[1] / max(res[s][(v, 'bwd')]):.2f}" for v in variants]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
