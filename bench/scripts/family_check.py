#!/usr/bin/env python3
"""Numerics of the fused family against PyTorch in f64 on the device: reads the safetensors that
`family_bench --dump DIR` writes (inputs and candle's fused outputs and gradients of
`sum(op(x) * dy)`), recomputes them in float64 from the same inputs, and prints the max
absolute error of candle and of PyTorch in the same dtype (F.rms_norm, torch.softmax, the
tensor-op rope: PyTorch has no fused rope). Same criterion as torch_check.py: exit status 1 when
candle's error exceeds 2x PyTorch's plus a floor of 8 ulps of the scale of what the result is
computed from (in f64 PyTorch's own error is 0). That scale is the result's, except for the
softmax dx = y * (dy - sum(dy * y)): max|y| * 2 max|dy| (the bracket is up to twice max|dy|, and
its rounding is what dx carries: 1.4e-15 at max|dx| = 0.69, logits of std 30, H200 2026-12-01).

    family_check.py DIR [family-numerics.csv]
"""
import glob
import os
import sys

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

EPS = float(torch.tensor(1e-5, dtype=torch.float32))  # what candle's f32 eps holds


def rope(x, cos, sin, interleaved):
    """x: (b, h, t, d); cos, sin: (t, d / 2)."""
    c, s = cos[None, None], sin[None, None]
    if interleaved:
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], -1).flatten(-2)
    d = x.shape[-1]
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    c, s = torch.cat([c, c], -1), torch.cat([s, s], -1)
    return x * c + torch.cat([-x2, x1], -1) * s


def outputs(op, t, dtype):
    """The forward and the gradients of sum(op(x) * dy), computed in `dtype`."""
    x = t["x"].detach().to(dtype).requires_grad_()
    dy = t["dy"].to(dtype)
    if op == "rms_norm":
        w = t["w"].detach().to(dtype).requires_grad_()
        if dtype == torch.float64:
            y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w
        else:
            y = F.rms_norm(x, (x.shape[-1],), w, EPS)
        dx, dw = torch.autograd.grad(y, (x, w), dy)
        return {"y": y.detach(), "dx": dx, "dw": dw}
    if op == "softmax_last_dim":
        y = torch.softmax(x, -1)
    else:
        y = rope(x, t["cos"].to(dtype), t["sin"].to(dtype), op == "rope_i")
    (dx,) = torch.autograd.grad(y, (x,), dy)
    return {"y": y.detach(), "dx": dx}


def main(folder, out_csv):
    lines = ["op,dtype,case,shape,tensor,candle_max_abs,torch_max_abs,scale,ok"]
    failed = False
    paths = sorted(glob.glob(os.path.join(folder, "*.safetensors")))
    if not paths:
        print(f"no *.safetensors in {folder}: run family_bench --dump {folder} first")
        return 1
    for path in paths:
        # <op>__<dtype>__<case>.safetensors
        op, dname, case = os.path.basename(path)[: -len(".safetensors")].split("__")
        t = {k: v.cuda() for k, v in load_file(path).items()}
        dtype = t["x"].dtype
        ref = outputs(op, t, torch.float64)
        same = outputs(op, t, dtype)
        shape = "x".join(str(d) for d in t["x"].shape)
        for k, r in ref.items():
            scale = max(r.abs().max().item(), 1e-30)
            terms = scale
            if op == "softmax_last_dim" and k == "dx":
                terms = max(scale, ref["y"].abs().max().item() * 2 * t["dy"].double().abs().max().item())
            ours = (t[k].double() - r).abs().max().item()
            theirs = (same[k].double() - r).abs().max().item()
            ok = ours <= 2 * theirs + 8 * torch.finfo(dtype).eps * terms
            failed |= not ok
            lines.append(f"{op},{dname},{case},{shape},{k},{ours:.3e},{theirs:.3e},{scale:.3e},{ok}")
    with open(out_csv, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    summary = {}
    for line in lines[1:]:
        op, d, _, _, k, ours, theirs, _, _ = line.split(",")
        o, th = summary.get((op, d, k), (0.0, 0.0))
        summary[(op, d, k)] = (max(o, float(ours)), max(th, float(theirs)))
    print("\nmax abs error vs PyTorch float64 (all cases): candle fused | PyTorch same dtype")
    for (op, d, k), (o, th) in sorted(summary.items()):
        print(f"  {op:17} {d:5} {k:3}  {o:.3e} | {th:.3e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "family-numerics.csv"))
