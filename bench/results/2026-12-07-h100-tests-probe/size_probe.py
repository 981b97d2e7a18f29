#!/usr/bin/env python3
"""PyTorch's layer-norm kernels and a same-bytes copy at the given points (the kernel harness
times ours at the same points): whether a point's share of the copy speed depends on the size
of its tensors, i.e. how much of the gap is per-launch (ramp-up, tail) rather than per-byte.

    size_probe.py --dtypes bf16,f32 --shapes 1678x10000,6712x10000 --reps 5
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from sweep_torch import copy_gbps, op_bytes, torch_point  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtypes", default="bf16,f32")
    ap.add_argument("--shapes", required=True, help="RxC,RxC")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    print("dtype rows cols | torch fwd us, GB/s, copy GB/s | torch bwd us, GB/s, copy GB/s")
    for dtype in a.dtypes.split(","):
        for shape in a.shapes.split(","):
            rows, cols = map(int, shape.split("x"))
            fwd, bwd = torch_point(dtype, rows, cols, a.reps)
            fb, bb = op_bytes(dtype, rows, cols, "fwd"), op_bytes(dtype, rows, cols, "bwd")
            print(f"{dtype} {rows} {cols} | {fwd:.1f} {fb / fwd / 1e3:.0f} {copy_gbps(fb, a.reps):.0f}"
                  f" | {bwd:.1f} {bb / bwd / 1e3:.0f} {copy_gbps(bb, a.reps):.0f}", flush=True)


if __name__ == "__main__":
    main()
