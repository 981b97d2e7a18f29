#!/usr/bin/env python3
"""PyTorch's CPU layer norm beside `cargo bench -p ln-bench --bench cpu`: the same shapes,
the same thread count (torch.set_num_threads, default 2 = this machine's cores). fwd =
F.layer_norm; bwd = aten.native_layer_norm_backward alone (dx, dw, db, no autograd engine);
fwd_bwd = F.layer_norm then autograd.grad of sum(y * dy) for x, w, b (the algebra of candle's
`(y * dy).backward()`). Median over `--reps` batches, microseconds. `--dtypes f32,bf16,f16,f64`
as the bench's `LN_CPU_DTYPES` (f32 by default), `--shapes RxC,RxC` as its `LN_CPU_SHAPES`.

With --criterion DIR (target/criterion), prints candle's criterion medians beside PyTorch's.
"""
import argparse
import json
import os
import time

import torch
import torch.nn.functional as F

SHAPES = [(4096, 64), (2048, 1024), (512, 4096), (64, 16384), (3000, 333), (257, 5000)]


def time_us(f, reps, min_s=0.2):
    f()
    n, t0 = 1, time.perf_counter()
    f()
    one = max(time.perf_counter() - t0, 1e-6)
    n = max(1, int(min_s / reps / one))
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        out.append((time.perf_counter() - t0) / n * 1e6)
    return sorted(out)[len(out) // 2]


DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "f64": torch.float64}


def criterion_us(folder, bench, shape):
    path = os.path.join(folder, "layer_norm_cpu", bench, shape, "new", "estimates.json")
    try:
        return json.load(open(path))["median"]["point_estimate"] / 1e3
    except OSError:
        return float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--criterion", help="target/criterion of a `cargo bench --bench cpu` run")
    ap.add_argument("--dtypes", default="f32", help="comma separated: " + ",".join(DTYPES))
    ap.add_argument("--shapes", help="RxC,RxC (default: the bench's shapes)")
    a = ap.parse_args()
    shapes = SHAPES
    if a.shapes:
        shapes = [tuple(int(v) for v in rc.split("x")) for rc in a.shapes.split(",")]
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads, median us")
    print("| shape | level | candle | torch | torch/candle |")
    print("|---|---|---:|---:|---:|")
    for name, rows, cols in [(d, r, c) for d in a.dtypes.split(",") for r, c in shapes]:
        dt = DTYPES[name]
        x = torch.randn(rows, cols).to(dt)
        w, b = (1 + 0.1 * torch.randn(cols)).to(dt), (0.1 * torch.randn(cols)).to(dt)
        dy = torch.randn(rows, cols).to(dt)
        with torch.no_grad():
            fwd = time_us(lambda: F.layer_norm(x, (cols,), w, b, 1e-5), a.reps)
            _, mean, rstd = torch.ops.aten.native_layer_norm(x, [cols], w, b, 1e-5)
            kernel = torch.ops.aten.native_layer_norm_backward
            bwd = time_us(lambda: kernel(dy, x, [cols], mean, rstd, w, b, [True, True, True]), a.reps)
        xg, wg, bg = (t.clone().requires_grad_() for t in (x, w, b))

        def step():
            y = F.layer_norm(xg, (cols,), wg, bg, 1e-5)
            torch.autograd.grad((y * dy).sum(), (xg, wg, bg))

        fwd_bwd = time_us(step, a.reps)
        shape = f"{rows}x{cols}" if name == "f32" else f"{rows}x{cols}-{name}"
        for level, us, bench in [("fwd", fwd, "fused_fwd"), ("bwd", bwd, "fused_bwd"), ("fwd_bwd", fwd_bwd, "fused_fwd_bwd")]:
            c = criterion_us(a.criterion, bench, shape) if a.criterion else float("nan")
            print(f"| {shape} | {level} | {c:.1f} | {us:.1f} | {us / c:.2f} |")


if __name__ == "__main__":
    main()
