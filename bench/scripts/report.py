#!/usr/bin/env python3
"""Merges gpu_bench and torch_bench CSVs into one markdown table and plots effective GB/s
against the shape (sorted by hidden size): fused (ours) vs PyTorch vs stock candle vs composite.

usage: report.py bench-candle.csv bench-torch.csv OUT_PREFIX [--title "H200, 2026-11-30"]
writes OUT_PREFIX.md, OUT_PREFIX.csv (merged, with each row's share of the copy speed) and
OUT_PREFIX.png. The copy speed is the `copy` row torch_bench.py measured on the GPU of the run;
CSVs of runs that recorded none are compared against the H200's (bench/device.toml), and the
table says so.
"""
import argparse
import csv

from ceiling import H200_COPY_GBPS


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("candle")
    ap.add_argument("torch")
    ap.add_argument("out")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    rows = load(a.candle) + load(a.torch)
    copies = [r for r in rows if r["impl"] == "copy"]
    rows = [r for r in rows if r["impl"] != "copy"]
    if copies:
        copy_gbps = float(copies[0]["gbps"])
        copy_text = f"{copy_gbps:.0f} GB/s, measured in this run ({int(copies[0]['cols'])}-byte device-to-device copies)"
    else:
        copy_gbps = H200_COPY_GBPS
        copy_text = f"{copy_gbps:.0f} GB/s, the H200's (bench/device.toml: this run recorded no copy)"
    fields = ["impl", "level", "dtype", "rows", "cols", "us", "gbps", "frac_copy"]
    with open(a.out + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in copies[:1] + rows:
            w.writerow({**r, "frac_copy": f"{float(r['gbps']) / copy_gbps:.3f}"})
    idx = {(r["impl"], r["level"], r["dtype"], int(r["rows"]), int(r["cols"])): r for r in rows}
    shapes = sorted({(int(r["rows"]), int(r["cols"])) for r in rows}, key=lambda s: (s[1], s[0]))
    dtypes = [d for d in ("f32", "bf16", "f16", "f64") if any(r["dtype"] == d for r in rows)]

    def cell(imp, level, d, s, unit="us"):
        r = idx.get((imp, level, d, s[0], s[1]))
        if r is None:
            return "-"
        return f"{float(r['us']):.1f} ({float(r['gbps']):.0f})"

    def ratio(a_imp, b_imp, level, d, s):
        ra, rb = idx.get((a_imp, level, d, *s)), idx.get((b_imp, level, d, *s))
        if ra is None or rb is None:
            return "-"
        return f"{float(rb['us']) / float(ra['us']):.2f}x"

    out = []
    out.append(f"### Layer norm ops: time in µs (effective GB/s) {a.title}\n")
    out.append("Effective GB/s = bytes that must move / time: forward reads x and writes y, backward reads x and dy and writes dx "
               f"(plus the parameters). Device copy speed: {copy_text}. Backward: the op alone, PyTorch's "
               "`aten.native_layer_norm_backward` kernel alone.\n")
    out.append("| dtype | rows×hidden | fused fwd | PyTorch fwd | stock fwd | composite fwd | fwd vs PyTorch | fwd vs stock | fused bwd | PyTorch bwd | bwd vs PyTorch | fused fwd % copy | fused bwd % copy |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for d in dtypes:
        for s in shapes:
            f = idx.get(("fused", "fwd", d, *s))
            b = idx.get(("fused", "bwd", d, *s))
            if f is None:
                continue
            out.append(
                f"| {d} | {s[0]}×{s[1]} | {cell('fused','fwd',d,s)} | {cell('torch','fwd',d,s)} | {cell('stock','fwd',d,s)} | "
                f"{cell('composite','fwd',d,s)} | {ratio('fused','torch','fwd',d,s)} | {ratio('fused','stock','fwd',d,s)} | "
                f"{cell('fused','bwd',d,s)} | {cell('torch','bwd',d,s)} | {ratio('fused','torch','bwd',d,s)} | "
                f"{100 * float(f['gbps']) / copy_gbps:.0f}% | {100 * float(b['gbps']) / copy_gbps:.0f}% |"
            )
    out.append("\n### Through autograd: forward + backward, µs\n")
    out.append("candle: `y = layer_norm(x, w, b)`, `(y * dy).backward()`; PyTorch: `F.layer_norm` + `torch.autograd.grad`.\n")
    out.append("| dtype | rows×hidden | fused | composite | PyTorch | fused vs composite | fused vs PyTorch |")
    out.append("|---|---|---|---|---|---|---|")
    for d in dtypes:
        for s in shapes:
            if ("fused", "fwd+bwd", d, *s) not in idx:
                continue
            g = lambda imp: idx.get((imp, "fwd+bwd", d, *s))
            us = lambda imp: f"{float(g(imp)['us']):.1f}" if g(imp) else "-"
            out.append(f"| {d} | {s[0]}×{s[1]} | {us('fused')} | {us('composite')} | {us('torch')} | "
                       f"{ratio('fused','composite','fwd+bwd',d,s)} | {ratio('fused','torch','fwd+bwd',d,s)} |")
    text = "\n".join(out) + "\n"
    with open(a.out + ".md", "w") as f:
        f.write(text)
    print(text)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = [("fwd", "forward op"), ("bwd", "backward op")]
    fig, axes = plt.subplots(len(dtypes), 2, figsize=(13, 4.2 * len(dtypes)), squeeze=False)
    labels = [f"{r}×{c}" for r, c in shapes]
    styles = {"fused": ("ours (fused)", "o-"), "torch": ("PyTorch 2.11", "s--"), "stock": ("stock candle", "^:"),
              "composite": ("composite (layer_norm_slow)", "x-.")}
    for i, d in enumerate(dtypes):
        for j, (level, lname) in enumerate(levels):
            ax = axes[i][j]
            for imp, (name, style) in styles.items():
                ys = [float(idx[(imp, level, d, *s)]["gbps"]) if (imp, level, d, *s) in idx else float("nan") for s in shapes]
                if all(y != y for y in ys):
                    continue
                ax.plot(range(len(shapes)), ys, style, label=name)
            ax.axhline(copy_gbps, color="grey", lw=0.8)
            ax.text(0, copy_gbps * 0.97, "device copy", va="top", fontsize=8, color="grey")
            ax.set_xticks(range(len(shapes)))
            ax.set_xticklabels(labels, rotation=30, fontsize=8)
            ax.set_ylabel("effective GB/s")
            ax.set_title(f"{lname}, {d} {a.title}")
            ax.set_ylim(0, copy_gbps * 1.08)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(a.out + ".png", dpi=110)


if __name__ == "__main__":
    main()
