#!/usr/bin/env python3
"""PyTorch's layer-norm kernels at the points of `gpu_bench --sweep`, beside ours.

Reads the candle CSV (its rows, hidden sizes and dtypes are the sweep: one source), times
`aten.native_layer_norm` and `aten.native_layer_norm_backward` alone (no autograd engine) with
gpu_bench's method, and writes one CSV with both, a summary (per dtype and direction: the
smallest ratio PyTorch time / ours, the median fraction of the copy speed, the worst points)
and a plot of GB/s against the hidden size with the copy speed as the ceiling.

Two ceilings: the device's copy speed (ceiling.measure_copy_gbps, a large copy on the GPU of
the run, kept in each row as `device_copy_gbps`), and a copy that moves the
point's own bytes, timed here with the same method (`copy_` of n bytes for the forward's 2n,
of 1.5n for the backward's 3n): what a memory-bound op of that size can reach, launch and
ramp-up included.

Passes: one candle CSV per pass of `gpu_bench --sweep` (run one after the other); PyTorch's
kernels and the same-bytes copy are timed in as many passes over the points, and each time in
the CSV is the median of its passes, with the spread (slowest / fastest pass) beside ours and
PyTorch's. A single pass has shown a point 2-3x off its neighbours' runs (H100, 2026-12-07:
a different point each run, ours or the copy): one pass cannot tell a slow kernel from a slow
moment.

    sweep_torch.py --candle-csv sweep-candle-1.csv sweep-candle-2.csv sweep-candle-3.csv \
        --csv sweep.csv --plot sweep.png
"""
import argparse
import csv
import statistics
import sys
import time

import torch

from ceiling import H200_COPY_GBPS, measure_copy_gbps
from torch_bench import DTYPES, iters_for, native_bwd_us, time_us

EPS = 1e-5


def torch_point(dtype, rows, cols, reps):
    """(fwd us, bwd us) of PyTorch's kernels at one point."""
    dt = DTYPES[dtype]
    dev = torch.device("cuda")
    x = torch.randn(rows, cols, device=dev).to(dt)
    w = (1 + 0.1 * torch.randn(cols, device=dev)).to(dt)
    b = (0.1 * torch.randn(cols, device=dev)).to(dt)
    dy = torch.randn(rows, cols, device=dev).to(dt)
    n, p = rows * cols * x.element_size(), cols * x.element_size()
    iters = iters_for(2 * n + 2 * p)
    fwd = time_us(lambda: torch.ops.aten.native_layer_norm(x, [cols], w, b, EPS), iters, reps)
    return fwd, native_bwd_us(x, w, b, dy, EPS, iters, reps)


def copy_gbps(nbytes, reps):
    """GB/s of `dst.copy_(src)` moving `nbytes` in all (half read, half written)."""
    n = nbytes // 2 // 4
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    us = time_us(lambda: dst.copy_(src), iters_for(nbytes), reps)
    return 8 * n / us / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--candle-csv", nargs="+", help="gpu_bench --sweep --csv output, one per pass")
    ap.add_argument("--csv", required=True, help="combined output CSV (read with --summary-only)")
    ap.add_argument("--plot", help="PNG: GB/s against hidden size")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--summary-only", action="store_true",
                    help="no timing: print the summary (and the plot) of an earlier run's --csv")
    a = ap.parse_args()
    if a.summary_only:
        with open(a.csv, newline="") as f:
            out = [{k: (v if k == "dtype" or k == "level" else float(v) if "." in v else int(v))
                    for k, v in r.items()} for r in csv.DictReader(f)]
        report(out, a.plot)
        return
    if not a.candle_csv:
        sys.exit("error: --candle-csv is needed unless --summary-only")
    if not torch.cuda.is_available():
        sys.exit("error: sweep_torch.py needs a CUDA device")
    ours = read_passes(a.candle_csv)
    points = sorted({k[:3] for k in ours}, key=lambda k: (k[0], k[2]))
    if not points:
        sys.exit(f"error: no fused fwd/bwd rows in {a.candle_csv}")
    device_copy, _ = measure_copy_gbps()
    print(f"device copy: {device_copy:.0f} GB/s ({torch.cuda.get_device_name()}), "
          f"{len(a.candle_csv)} pass(es)", flush=True)
    theirs, copies = {}, {}
    for _ in a.candle_csv:
        for dtype, rows, cols in points:
            fwd, bwd = torch_point(dtype, rows, cols, a.reps)
            for level, us in (("fwd", fwd), ("bwd", bwd)):
                key = (dtype, rows, cols, level)
                if key in ours:
                    theirs.setdefault(key, []).append(us)
                    copies.setdefault(key, []).append(copy_gbps(op_bytes(*key), a.reps))
            torch.cuda.empty_cache()
    out = []
    for key in sorted(theirs, key=lambda k: (k[0], k[2], k[3] != "fwd")):
        dtype, rows, cols, level = key
        nbytes = op_bytes(*key)
        us, them = statistics.median(ours[key]), statistics.median(theirs[key])
        out.append(dict(dtype=dtype, level=level, rows=rows, cols=cols, ours_us=us, torch_us=them,
                        ours_gbps=nbytes / us / 1e3, torch_gbps=nbytes / them / 1e3,
                        ratio=them / us, copy_gbps=statistics.median(copies[key]),
                        device_copy_gbps=device_copy, passes=len(ours[key]),
                        ours_spread=spread(ours[key]), torch_spread=spread(theirs[key])))
    with open(a.csv, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(out[0]))
        wr.writeheader()
        for r in out:
            wr.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()})
    report(out, a.plot)


def op_bytes(dtype, rows, cols, level):
    """Bytes the op must move: x, weight, bias in and y out (fwd); x, dy, weight in and dx, dw, db
    out (bwd)."""
    size = torch.tensor([], dtype=DTYPES[dtype]).element_size()
    return (2 if level == "fwd" else 3) * (rows * cols + cols) * size


def read_passes(paths):
    """Ours per point (dtype, rows, cols, level): the fused op's time in each pass's CSV."""
    ours = {}
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["impl"] == "fused" and r["level"] in ("fwd", "bwd"):
                    ours.setdefault((r["dtype"], int(r["rows"]), int(r["cols"]), r["level"]), []).append(float(r["us"]))
    for key, times in ours.items():
        if len(times) != len(paths):
            sys.exit(f"error: {key} is in {len(times)} of the {len(paths)} candle CSVs (one sweep per pass)")
    return ours


def spread(times):
    """Slowest pass over fastest."""
    return max(times) / min(times)


def report(out, plot):
    """The summary per dtype and direction, the points below PyTorch, and the plot to `plot`."""
    if "device_copy_gbps" in out[0]:
        ceiling = out[0]["device_copy_gbps"]
        print(f"% copy: of this run's device copy, {ceiling:.0f} GB/s")
    else:
        ceiling = H200_COPY_GBPS
        print(f"% copy: of the H200's copy, {ceiling:.0f} GB/s (bench/device.toml; this CSV recorded no copy)")
    print(f"{'dtype':<5} {'dir':<4} {'points':>6} {'min ratio':>10} {'median ratio':>12} "
          f"{'ours % copy (median)':>21} {'PyTorch % copy':>15} {'ours % same-bytes copy':>23} "
          f"{'PyTorch':>8}  worst points (hidden: ratio, ours % copy)")
    for dtype in sorted({r["dtype"] for r in out}):
        for level in ("fwd", "bwd"):
            rs = [r for r in out if r["dtype"] == dtype and r["level"] == level]
            if not rs:
                continue
            worst = sorted(rs, key=lambda r: r["ratio"])[:5]
            worst_s = ", ".join(f"{r['cols']}: {r['ratio']:.2f}x {r['ours_gbps'] / ceiling:.0%}" for r in worst)
            print(f"{dtype:<5} {level:<4} {len(rs):>6} {min(r['ratio'] for r in rs):>9.2f}x "
                  f"{statistics.median(r['ratio'] for r in rs):>11.2f}x "
                  f"{statistics.median(r['ours_gbps'] for r in rs) / ceiling:>21.0%} "
                  f"{statistics.median(r['torch_gbps'] for r in rs) / ceiling:>15.0%} "
                  f"{statistics.median(r['ours_gbps'] / r['copy_gbps'] for r in rs):>23.0%} "
                  f"{statistics.median(r['torch_gbps'] / r['copy_gbps'] for r in rs):>8.0%}  {worst_s}")
    if "ours_spread" in out[0]:
        wide = sorted(out, key=lambda r: -max(r["ours_spread"], r["torch_spread"]))[:5]
        print(f"passes: {out[0]['passes']}; widest spreads (slowest / fastest pass, ours | PyTorch): "
              + ", ".join(f"{r['dtype']} {r['level']} {r['cols']}: {r['ours_spread']:.2f} | {r['torch_spread']:.2f}"
                          for r in wide))
    below = [r for r in out if r["ratio"] < 1.0]
    print(f"points below PyTorch: {len(below)} of {len(out)}")
    for r in below:
        print(f"  {r['dtype']} {r['level']} {r['rows']}x{r['cols']}: ours {r['ours_us']:.1f} us, "
              f"PyTorch {r['torch_us']:.1f} us ({r['ratio']:.2f}x)")

    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        dtypes = sorted({r["dtype"] for r in out})
        fig, axes = plt.subplots(2, len(dtypes), figsize=(5 * len(dtypes), 8), squeeze=False)
        for j, dtype in enumerate(dtypes):
            for i, level in enumerate(("fwd", "bwd")):
                ax = axes[i][j]
                rs = sorted((r for r in out if r["dtype"] == dtype and r["level"] == level), key=lambda r: r["cols"])
                xs = [r["cols"] for r in rs]
                ax.plot(xs, [r["ours_gbps"] for r in rs], "o-", ms=3, label="candle fork (fused)")
                ax.plot(xs, [r["torch_gbps"] for r in rs], "s--", ms=3, label="PyTorch kernel")
                ax.axhline(ceiling, color="gray", lw=0.8, label="copy")
                ax.plot(xs, [r["copy_gbps"] for r in rs], ":", color="gray", lw=0.8, label="copy, same bytes")
                ax.set_xscale("log", base=2)
                ax.set_title(f"{dtype} {level}, tensors >= 32 MiB")
                ax.set_xlabel("hidden size")
                ax.set_ylabel("GB/s")
                ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(plot, dpi=110)


if __name__ == "__main__":
    main()
