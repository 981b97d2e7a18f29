"""Compares static_sizes.sh outputs: the shipped backward tiers' SASS size, registers and spills
of each build beside the first (the base), and every kernel whose spills grew.

    python3 bench/kernel-harness/static_compare.py sizes-base.txt sizes-a.txt [sizes-b.txt ...]
"""
import os
import re
import sys


def load(path):
    kernels = {}
    for line in open(path):
        size, regs, spill_st, spill_ld, name = line.split(None, 4)
        kernels[name.strip()] = (int(size), int(regs), int(spill_st), int(spill_ld))
    return kernels


def shipped_bwd_tiers(root, dtype):
    """The tags that LAYER_NORM_BWD_TIERS and its tile list ship for dtype, in the registry's
    order (rows X16 only for 16-bit dtypes, X32 only for f32)."""
    text = open(os.path.join(root, "candle-patch/candle-kernels/src/layer_norm_tiers.cuh")).read()
    skip = "32" if dtype in ("bf16", "f16") else "16"
    tags = []
    for macro in ("LAYER_NORM_BWD_TIERS", "LAYER_NORM_BWD_TILE_TIERS"):
        body = text.split(f"#define {macro}(", 1)[1].split("\n\n", 1)[0]
        tags += [tag for kind, tag in re.findall(r"X(16|32)?\((\w+),", body) if kind != skip]
    return tags


root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
paths = sys.argv[1:]
builds = [load(p) for p in paths]
names = [os.path.basename(p).removeprefix("sizes-").removesuffix(".txt") for p in paths]
base = builds[0]
head = " | ".join(f"{n}: bytes ratio, regs, spill st/ld" for n in names[1:])
print(f"| kernel | {names[0]}: bytes, regs, spill st/ld | {head} |")
print("|---|---|" + "---|" * (len(names) - 1))
for dt in ("bf16", "f16", "f32"):
    for tag in shipped_bwd_tiers(root, dt):
        k = f"layernorm_bwd_{tag}_{dt}"
        if k not in base:
            continue
        b = base[k]
        cells = [f"{o[k][0] / b[0]:.3f}, {o[k][1]}, {o[k][2]}/{o[k][3]}" for o in builds[1:]]
        print(f"| {k} | {b[0]}, {b[1]}, {b[2]}/{b[3]} | " + " | ".join(cells) + " |")
print()
for dt in ("bf16", "f16", "f32"):
    sel = [k for k in base if k.startswith("layernorm_") and k.endswith("_" + dt)]
    total = sum(base[k][0] for k in sel)
    ratios = ", ".join(f"{n} {sum(o[k][0] for k in sel) / total:.3f}" for n, o in zip(names[1:], builds[1:]))
    print(f"- {dt}: all layer-norm kernels {total} bytes in {names[0]}; {ratios}")
print()
for k in sorted(base):
    grown = [n for n, o in zip(names[1:], builds[1:]) if o[k][2] > base[k][2] or o[k][3] > base[k][3]]
    if grown:
        print(f"- spills grew in {k} ({', '.join(grown)}): " +
              "; ".join(f"{n} {o[k][1]} regs {o[k][2]}/{o[k][3]}" for n, o in zip(names, builds)))
