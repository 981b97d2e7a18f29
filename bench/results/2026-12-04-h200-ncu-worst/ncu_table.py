#!/usr/bin/env python3
"""Markdown table of the `ncu` text reports of call 1 (ncu-<dtype>-<shape>-<dir>.txt in DIR):
per profiled kernel its duration, throughputs, registers, occupancy, cycles between issued
instructions and the stall ncu names as the largest.

    ncu_table.py DIR
"""
import glob
import os
import re
import sys


def metric(block, name):
    m = re.search(r"^\s+" + re.escape(name) + r"\s+(\S+)?\s+([\d,.]+)\s*$", block, re.M)
    return m.group(2).replace(",", "") if m else "?"


def stall(block):
    m = re.search(r"spends ([\d.]+) cycles being stalled (.*?)\. .*?represents about ([\d.]+)%", block, re.S)
    if not m:
        return "(no stall rule fired)"
    what = " ".join(m.group(2).split())
    what = what.replace("waiting for a scoreboard dependency on a L1TEX (local, global, surface, texture) operation", "L1TEX scoreboard (long)")
    what = what.replace("waiting for a scoreboard dependency on a MIO (memory input/output) operation (not to L1TEX)", "MIO scoreboard (short)")
    return f"{what} {m.group(3)}%"


def main():
    folder = sys.argv[1]
    print("| point | kernel | grid | µs (ncu) | DRAM % | L1 % | L2 % | SM % | regs | occupancy theor. / achieved % | cycles / issue | largest stall |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in sorted(glob.glob(os.path.join(folder, "ncu-*.txt"))):
        dtype, shape, direction = os.path.basename(path)[4:-4].split("-")
        text = open(path).read()
        blocks = re.split(r"^  (?=layernorm_)", text, flags=re.M)[1:]
        seen = set()
        for b in blocks:
            head = b.splitlines()[0]
            name = head.split()[0]
            if name in seen:
                continue
            seen.add(name)
            grid = re.search(r"\(([\d, ]+)\)x", head).group(1).replace(" ", "")
            print(f"| {dtype} {shape} {direction} | `{name}` | {grid} | {metric(b, 'Duration')} | "
                  f"{metric(b, 'DRAM Throughput')} | {metric(b, 'L1/TEX Cache Throughput')} | "
                  f"{metric(b, 'L2 Cache Throughput')} | {metric(b, 'Compute (SM) Throughput')} | "
                  f"{metric(b, 'Registers Per Thread')} | {metric(b, 'Theoretical Occupancy')} / "
                  f"{metric(b, 'Achieved Occupancy')} | {metric(b, 'Warp Cycles Per Issued Instruction')} | {stall(b)} |")


if __name__ == "__main__":
    main()
