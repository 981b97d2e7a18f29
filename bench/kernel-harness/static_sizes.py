"""Joins a cubin's per-kernel code sizes (readelf) with ptxas -v's registers and spills.

Used by static_sizes.sh; prints `bytes regs spill_st spill_ld name` per kernel, sorted by name.
"""
import re
import subprocess
import sys

cubin, ptxas = sys.argv[1], sys.argv[2]
sizes = {}
out = subprocess.run(["readelf", "-SW", cubin], capture_output=True, text=True, check=True).stdout
for m in re.finditer(r"\]\s+\.text\.(\S+)\s+PROGBITS\s+\S+\s+\S+\s+([0-9a-f]+)", out):
    sizes[m.group(1)] = int(m.group(2), 16)
regs, spills, fn = {}, {}, None
for line in open(ptxas):
    m = re.search(r"Compiling entry function '(\S+)'", line) or re.search(r"Function properties for (\S+)", line)
    if m:
        fn = m.group(1)
    m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m and fn:
        spills[fn] = (int(m.group(1)), int(m.group(2)))
    m = re.search(r"Used (\d+) registers", line)
    if m and fn:
        regs[fn] = int(m.group(1))
names = subprocess.run(["c++filt"], input="\n".join(sizes), capture_output=True, text=True).stdout.split("\n")
for (mangled, size), name in sorted(zip(sizes.items(), names), key=lambda p: p[1]):
    st, ld = spills.get(mangled, (0, 0))
    print(f"{size:8d} {regs.get(mangled, 0):4d} {st:5d} {ld:5d} {name}")
