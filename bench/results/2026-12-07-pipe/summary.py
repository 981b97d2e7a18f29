#!/usr/bin/env python3
"""Markdown table of a pipe experiment's bench output (pipe_exp / pipe_fwd_exp): per dtype and
shape, the shipped tier's time and share of the same-bytes copy against the fastest pipe method.
  python3 summary.py call2/bench-pipe_exp.txt"""
import re
import sys

rows = {}
for line in open(sys.argv[1]):
    if not line.startswith("bench "):
        continue
    f = line.split()
    us = float(re.search(r"([\d.]+) us", line).group(1))
    share = float(re.search(r"([\d.]+)% copy", line).group(1))
    name = re.search(r"\d+x\d+\s+(.*?)\s+(parts|\d+\.\d+ us)", line).group(1).strip()
    key = (f[1], f[2])
    r = rows.setdefault(key, {"ship": None, "pipe": None})
    if name.startswith("ship"):
        r["ship"] = (us, share, name)
    elif r["pipe"] is None or us < r["pipe"][0]:
        r["pipe"] = (us, share, name)
print("| dtype | shape | shipped tier | µs | % copy | fastest pipe | µs | % copy | pipe / shipped |")
print("|---|---|---|---:|---:|---|---:|---:|---:|")
for (dt, shape), r in rows.items():
    s, p = r["ship"], r["pipe"]
    if not s:
        continue
    pc = f"{p[2]} | {p[0]:.1f} | {p[1]:.1f} | {p[0] / s[0]:.3f}" if p else "— | | |"
    print(f"| {dt} | {shape} | {s[2][5:]} | {s[0]:.1f} | {s[1]:.1f} | {pc} |")
