"""Compares two builds of the production kernels kernel by kernel (sass_diff.sh): for each
family and dtype how many kernels' SASS changed, and for each changed kernel its instruction
count, registers and stack frame (spills) before and after, with the opcodes whose counts moved.

    python3 bench/kernel-harness/sass_diff.py BASE NEW   (stems of BASE.sass/.res, NEW.sass/.res)
"""
import collections
import re
import sys

INSTR = re.compile(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
LABEL = re.compile(r"\.L_x_\d+")
PRED = re.compile(r"^@!?U?P[T0-9]+\s+")


def sass(path):
    """Kernel name -> its instructions, branch labels renumbered within the kernel (nvdisasm
    numbers them across the file, so an unchanged kernel would otherwise differ)."""
    kernels, cur = {}, None
    for line in open(path):
        m = re.match(r"\s*\.text\.(\S+):", line)
        if m:
            cur = kernels.setdefault(m.group(1), [])
            continue
        m = INSTR.match(line)
        if cur is not None and m:
            cur.append(m.group(1))
    for name, instrs in kernels.items():
        labels = {}
        kernels[name] = [LABEL.sub(lambda l: labels.setdefault(l.group(0), f"L{len(labels)}"), i) for i in instrs]
    return kernels


def resources(path):
    """Kernel name -> (registers, stack bytes) from cuobjdump --dump-resource-usage (the stack
    frame holds the register spills and local arrays)."""
    out, name = {}, None
    for line in open(path):
        m = re.match(r"\s*Function (\S+):", line)
        if m:
            name = m.group(1)
        m = re.search(r"REG:(\d+) STACK:(\d+)", line)
        if name and m:
            out[name] = (int(m.group(1)), int(m.group(2)))
    return out


def family(name):
    """(family, dtype): the kernel name without its tier tag, and its dtype."""
    base, dtype = name.rsplit("_", 1)
    return re.sub(r"_l\d+v\d+[a-z0-9]*", "", base), dtype


def opcode(instr):
    return PRED.sub("", instr).split()[0]


def main(base_stem, new_stem):
    a, b = sass(base_stem + ".sass"), sass(new_stem + ".sass")
    ra, rb = resources(base_stem + ".res"), resources(new_stem + ".res")
    if set(a) != set(b):
        print(f"kernels only in base: {sorted(set(a) - set(b))}; only in new: {sorted(set(b) - set(a))}")
    common = sorted(set(a) & set(b))
    changed = [k for k in common if a[k] != b[k]]
    print(f"{len(changed)} of {len(common)} kernels changed (SASS compared instruction by instruction).\n")
    counts = collections.defaultdict(lambda: [0, 0])
    for k in common:
        counts[family(k)][1] += 1
        counts[family(k)][0] += k in changed
    print("| family | dtype | changed / kernels |\n|---|---|---|")
    for (fam, dtype), (n, total) in sorted(counts.items()):
        if n:
            print(f"| {fam} | {dtype} | {n} / {total} |")
    unchanged = sorted({fam for (fam, _), (n, _) in counts.items() if n == 0} - {fam for (fam, _), (n, _) in counts.items() if n})
    print(f"\nUnchanged in every dtype: {', '.join(unchanged) or 'none'}.\n")
    print("| kernel | instructions | registers | stack bytes | opcodes moved (new - base) |\n|---|---|---|---|---|")
    for k in changed:
        ha = collections.Counter(map(opcode, a[k]))
        hb = collections.Counter(map(opcode, b[k]))
        moved = sorted(((hb[o] - ha[o], o) for o in set(ha) | set(hb) if hb[o] != ha[o]), key=lambda t: -abs(t[0]))
        regs = ra.get(k, ("?", "?")), rb.get(k, ("?", "?"))
        flag = " **stack grew**" if regs[1][1] != "?" and regs[1][1] > regs[0][1] else ""
        print(f"| {k} | {len(a[k])} → {len(b[k])} | {regs[0][0]} → {regs[1][0]} | {regs[0][1]} → {regs[1][1]}{flag} | "
              + " ".join(f"{o} {d:+d}" for d, o in moved[:6]) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
