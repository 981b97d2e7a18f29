"""Same-call A/B of two builds' family_bench CSVs (bench/src/bin/family_bench.rs), rounds
alternating: per op, level, dtype and shape the median time of each build over its rounds, the
ratio new / base and each build's spread (slowest / fastest round).

    python3 bench/scripts/family_ab.py BASE.csv[,BASE2.csv ...] NEW.csv[,NEW2.csv ...] > ab.md
"""
import csv
import statistics
import sys


def rounds(paths):
    """(op, level, dtype, shape) -> the times of every round, in microseconds."""
    times = {}
    for path in paths.split(","):
        for row in csv.DictReader(open(path)):
            times.setdefault((row["op"], row["level"], row["dtype"], row["shape"]), []).append(float(row["us"]))
    return times


def main(base_paths, new_paths):
    base, new = rounds(base_paths), rounds(new_paths)
    print("| op | level | dtype | shape | base µs | new µs | new / base | spread base / new |")
    print("|---|---|---|---|---|---|---|---|")
    for key in base:
        if key not in new:
            continue
        b, n = statistics.median(base[key]), statistics.median(new[key])
        spread = "/".join(f"{max(t) / min(t):.2f}" for t in (base[key], new[key]))
        print(f"| {' | '.join(key)} | {b:.1f} | {n:.1f} | {n / b:.3f} | {spread} |")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
