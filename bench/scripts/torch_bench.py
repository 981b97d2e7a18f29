#!/usr/bin/env python3
"""PyTorch side of the layer norm comparison: same grid, same method as gpu_bench
(warm up, then `reps` batches of `iters` calls each ended by a synchronize; median batch / iters).

Levels: fwd = F.layer_norm; bwd = PyTorch's backward kernel alone
(`aten.native_layer_norm_backward` with the forward's saved mean and rstd, no autograd engine,
as gpu_bench's bwd is our backward op alone); fwd+bwd = F.layer_norm + torch.autograd.grad, as a
training step does. Writes a CSV with the columns of gpu_bench, and a row `copy` with this GPU's
copy speed (ceiling.measure_copy_gbps), which report.py compares every row against.
"""
import argparse
import time

import torch
import torch.nn.functional as F

from ceiling import COPY_BYTES, measure_copy_gbps

SHAPES = [(16384, 64), (16384, 256), (8192, 1024), (4096, 4096), (1024, 16384), (65536, 1024), (32768, 4096)]
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "f64": torch.float64}


def iters_for(nbytes):
    return int(min(max(2e9 / max(nbytes, 1), 5), 200))


def time_us(fn, iters, reps):
    for _ in range(min(max(iters, 3), 20)):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e6 / iters)
    times.sort()
    n = len(times)
    return times[n // 2] if n % 2 else (times[n // 2 - 1] + times[n // 2]) / 2


def native_bwd_us(x, w, b, dy, eps, iters, reps):
    """PyTorch's layer-norm backward kernel alone: `aten.native_layer_norm_backward` with the
    forward's saved mean and rstd, no autograd engine."""
    cols = x.shape[-1]
    with torch.no_grad():
        _, mean, rstd = torch.ops.aten.native_layer_norm(x, [cols], w, b, eps)
        mask = [True, True, True]
        return time_us(
            lambda: torch.ops.aten.native_layer_norm_backward(dy, x, [cols], mean, rstd, w, b, mask),
            iters,
            reps,
        )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--shapes", type=int, default=len(SHAPES))
    ap.add_argument("--csv", default="bench-torch.csv")
    a = ap.parse_args()
    dev = "cuda"
    copy_gbps, copy_us = measure_copy_gbps()
    print(f"device copy: {copy_gbps:.0f} GB/s ({COPY_BYTES} bytes in {copy_us:.1f} us)", flush=True)
    rows_out = [("copy", "d2d", "u8", 1, COPY_BYTES, copy_us, 2 * COPY_BYTES)]
    for dname in a.dtypes.split(","):
        dt = DTYPES[dname]
        for rows, cols in SHAPES[: a.shapes]:
            x = torch.randn(rows, cols, device=dev, dtype=dt, requires_grad=True)
            w = (1 + 0.1 * torch.randn(cols, device=dev)).to(dt).requires_grad_()
            b = (0.1 * torch.randn(cols, device=dev)).to(dt).requires_grad_()
            dy = torch.randn(rows, cols, device=dev, dtype=dt)
            n = rows * cols * x.element_size()
            p = cols * x.element_size()
            fwd_bytes, bwd_bytes = 2 * n + 2 * p, 3 * n + 3 * p
            iters = iters_for(fwd_bytes)
            with torch.no_grad():
                us = time_us(lambda: F.layer_norm(x, (cols,), w, b, 1e-5), iters, a.reps)
            rows_out.append(("torch", "fwd", dname, rows, cols, us, fwd_bytes))
            us = native_bwd_us(x, w, b, dy, 1e-5, iters, a.reps)
            rows_out.append(("torch", "bwd", dname, rows, cols, us, bwd_bytes))

            def step():
                y = F.layer_norm(x, (cols,), w, b, 1e-5)
                return torch.autograd.grad(y, (x, w, b), dy)

            us = time_us(step, max(iters // 4, 2), a.reps)
            rows_out.append(("torch", "fwd+bwd", dname, rows, cols, us, fwd_bytes + bwd_bytes))
            print(f"{dname} {rows}x{cols}: " + ", ".join(f"{r[1]} {r[5]:.1f} us" for r in rows_out[-3:]), flush=True)
    with open(a.csv, "w") as f:
        f.write("impl,level,dtype,rows,cols,us,gbps\n")
        for imp, level, dname, rows, cols, us, nbytes in rows_out:
            f.write(f"{imp},{level},{dname},{rows},{cols},{us:.3f},{nbytes / us / 1e3:.1f}\n")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
