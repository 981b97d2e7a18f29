"""Call 1 table: the backward (kernel, kernel + reduce, reduce) per shape and cluster size,
two rounds: python3 table.py call1"""
import re, sys, collections
d = sys.argv[1] if len(sys.argv) > 1 else "call1"
pat = re.compile(r"^bench (\S+)\s+(\d+x\d+)\s+fwd.*\| bwd (\S+(?: ?-words)?)\s+grid\s+(\d+)\s+([\d.]+) us.*bwd\+reduce\s+([\d.]+) us.*reduce\s+([\d.]+) us")
rows = collections.defaultdict(dict)
for c in (1, 2, 4):
    for r in (1, 2):
        for line in open(f"{d}/bench-c{c}-{r}.txt"):
            m = pat.match(line)
            if m:
                dt, shape, tier, grid, k, kr, red = m.groups()
                rows[(dt, shape, tier)][(c, r)] = (float(k), float(kr), float(red))
print("| dtype | shape | tier | C=1 kernel+reduce (kernel / reduce), µs | C=2 | C=4 | C=2 / C=1 | C=4 / C=1 |")
print("|---|---|---|---|---|---|---|---|")
for (dt, shape, tier), v in rows.items():
    def cell(c):
        xs = [v[(c, r)] for r in (1, 2) if (c, r) in v]
        return "–".join(f"{x[1]:.1f}" for x in xs) + " (" + "–".join(f"{x[0]:.1f}/{x[2]:.1f}" for x in xs) + ")"
    def best(c):
        return min([v[(c, r)][1] for r in (1, 2) if (c, r) in v] or [float("nan")])
    print(f"| {dt} | {shape} | {tier} | {cell(1)} | {cell(2)} | {cell(4)} | {best(2)/best(1):.3f} | {best(4)/best(1):.3f} |")
