#!/usr/bin/env python3
"""PyTorch side of bench/src/bin/family_bench.rs: the same ops, shapes, levels and timing
method (warm up, then `reps` batches of `iters` calls each ended by a synchronize; median batch
/ iters). rms_norm = F.rms_norm, softmax_last_dim = torch.softmax(x, -1), rope = the tensor-op
rotate-half rope (PyTorch has no fused rope). bwd = PyTorch's backward kernel alone, no autograd
engine around it: aten._fused_rms_norm_backward (dx and dw) where this PyTorch has it (else
autograd.grad on a retained graph, marked in the "torch_bwd" column), aten._softmax_backward_data;
rope has no backward kernel, so autograd.grad of the tensor-op rope on a retained graph. step =
forward, then (y * dy).sum().backward(), the algebra of candle's `(y * dy).backward()`.

With --candle-csv, prints both side by side (ratio = PyTorch time / candle time, > 1: candle
is faster) and the effective GB/s against the copy speed of the GPU it runs on.
"""
import argparse
import csv

import torch
import torch.nn.functional as F

# The same timing method and copy speed as the layer-norm comparison.
from ceiling import measure_copy_gbps
from torch_bench import iters_for, time_us

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def rope(x, cos, sin):
    d = x.shape[-1]
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    c = torch.cat([cos, cos], -1)[None, None]
    s = torch.cat([sin, sin], -1)[None, None]
    return x * c + torch.cat([-x2, x1], -1) * s


def forward(op, x, w, cos, sin):
    if op == "rms_norm":
        return F.rms_norm(x, (x.shape[-1],), w, 1e-5)
    if op == "softmax_last_dim":
        return torch.softmax(x, -1)
    return rope(x, cos, sin)


def backward(op, x, w, dy, cos, sin):
    """The backward op alone as a closure, and what it times."""
    if op == "rms_norm" and hasattr(torch.ops.aten, "_fused_rms_norm_backward"):
        y, rstd = torch.ops.aten._fused_rms_norm(x, [x.shape[-1]], w, 1e-5)
        kernel = torch.ops.aten._fused_rms_norm_backward
        return (lambda: kernel(dy, x, [x.shape[-1]], rstd, w, [True, True])), "aten kernel"
    if op == "softmax_last_dim":
        y = torch.softmax(x, -1)
        kernel = torch.ops.aten._softmax_backward_data
        return (lambda: kernel(dy, y, -1, x.dtype)), "aten kernel"
    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
    y = forward(op, xg, wg, cos, sin)
    inputs = (xg, wg) if op == "rms_norm" else (xg,)
    return (lambda: torch.autograd.grad(y, inputs, dy, retain_graph=True)), "autograd.grad"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--candle-csv", required=True)
    ap.add_argument("--csv", default="family-torch.csv")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    candle = list(csv.DictReader(open(a.candle_csv)))
    out = []
    for row in candle:
        dt = DTYPES[row["dtype"]]
        shape = [int(d) for d in row["shape"].split("x")]
        x = torch.randn(*shape, device="cuda", dtype=dt)
        dy = torch.randn(*shape, device="cuda", dtype=dt)
        w = (1 + 0.1 * torch.randn(shape[-1], device="cuda")).to(dt)
        seq = shape[2] if row["op"] == "rope" else 1
        theta = torch.randn(seq, shape[-1] // 2, device="cuda")
        cos, sin = theta.cos().to(dt), theta.sin().to(dt)
        nbytes = int(row["bytes"])
        iters = iters_for(2 * x.numel() * x.element_size())
        how = ""
        if row["level"] == "fwd":
            with torch.no_grad():
                us = time_us(lambda: forward(row["op"], x, w, cos, sin), iters, a.reps)
        elif row["level"] == "bwd":
            bwd, how = backward(row["op"], x, w, dy, cos, sin)
            us = time_us(bwd, iters, a.reps)
            del bwd
        else:
            xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()

            def step():
                y = forward(row["op"], xg, wg, cos, sin)
                (y * dy).sum().backward()
                xg.grad, wg.grad = None, None

            us = time_us(step, max(1, (iters + 3) // 4), a.reps)
        out.append({**row, "impl": "torch", "us": f"{us:.2f}", "torch_bwd": how})
        del x, dy
        torch.cuda.empty_cache()
    with open(a.csv, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(candle[0].keys()) + ["torch_bwd"])
        wr.writeheader()
        wr.writerows(out)
    copy_gbps, _ = measure_copy_gbps()
    print(f"% copy: of this GPU's device copy, {copy_gbps:.0f} GB/s ({torch.cuda.get_device_name()})\n")
    print("| op | level | dtype | shape | candle us | torch us | torch/candle | candle GB/s | % copy "
          "| torch GB/s | torch bwd timed as |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---|")
    for c, t in zip(candle, out):
        cu, tu = float(c["us"]), float(t["us"])
        gbps, tgbps = int(c["bytes"]) / cu / 1e3, int(c["bytes"]) / tu / 1e3
        print(
            f"| {c['op']} | {c['level']} | {c['dtype']} | {c['shape']} | {cu:.1f} | {tu:.1f} | "
            f"{tu / cu:.2f} | {gbps:.0f} | {100 * gbps / copy_gbps:.0f}% | {tgbps:.0f} | "
            f"{t['torch_bwd']} |"
        )


if __name__ == "__main__":
    main()
