#!/usr/bin/env python3
"""GPU time per step by kernel, from `ncu --csv --metrics gpu__time_duration.sum` over STEPS
training steps (`tft --profile STEPS` marks them with cuProfilerStart/Stop, so run ncu with
`--profile-from-start off`): total kernel time and kernels per step, then the kernels that take it.

    ncu_kernels.py NCU_CSV --steps N [--top K]
"""
import argparse
import csv
import sys
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="ncu's --csv output (--log-file)")
    ap.add_argument("--steps", type=int, required=True, help="steps the profiled range covers")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    if a.steps < 1:
        ap.error(f"--steps must be at least 1 (got {a.steps})")
    with open(a.csv, newline="") as f:
        # ncu prints its own lines (==PROF==) before the table: start at the header row.
        lines = [l for l in f if l.startswith('"')]
    rows = [r for r in csv.DictReader(lines) if r.get("Metric Name") == "gpu__time_duration.sum"]
    if not rows:
        sys.exit(f"error: no gpu__time_duration.sum rows in {a.csv} (was the range marked?)")
    scale = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0}
    by_name = defaultdict(lambda: [0.0, 0])
    for r in rows:
        unit = r.get("Metric Unit", "nsecond")
        if unit not in scale:
            sys.exit(f"error: unknown unit {unit!r}")
        ms = float(r["Metric Value"].replace(",", "")) * scale[unit]
        # Template arguments make names long; the part before '(' names the kernel.
        name = r["Kernel Name"].split("(")[0]
        by_name[name][0] += ms
        by_name[name][1] += 1
    total = sum(t for t, _ in by_name.values())
    n = a.steps
    print(f"{len(rows) / n:.0f} kernels/step, {total / n:.2f} ms/step of GPU time (kernels run one by one under ncu)")
    print(f"{'ms/step':>8} {'share':>6} {'calls':>7} {'us/call':>8}  kernel")
    for name, (t, c) in sorted(by_name.items(), key=lambda kv: -kv[1][0])[: a.top]:
        print(f"{t / n:>8.3f} {t / total:>6.1%} {c / n:>7.0f} {t / c * 1e3:>8.1f}  {name[:100]}")


if __name__ == "__main__":
    main()
