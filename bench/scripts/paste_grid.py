#!/usr/bin/env python3
"""Puts the grid tables of a device run's report.md (bench/scripts/report.py) into a markdown
file (UPSTREAM.md), so the tables there are the run's, cell for cell:

    paste_grid.py REPORT_MD TARGET_MD

Each table of REPORT_MD (a `| dtype | rows×hidden | ...` block), with the paragraph just above
it, replaces the target's table with the same header row and the paragraph above that one.
Fails when a table of the report has no table with the same header in the target, so a renamed
column cannot leave a stale table behind.
"""
import sys


def blocks(lines):
    """(start, end, header) of each table, start at the paragraph above it (one line)."""
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("| dtype |"):
            end = i
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            # The paragraph above the table: the last non-empty line before it.
            above = i - 1
            while above >= 0 and not lines[above].strip():
                above -= 1
            out.append((above, end, lines[i]))
            i = end
        else:
            i += 1
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    report = open(sys.argv[1]).read().splitlines(keepends=True)
    target = open(sys.argv[2]).read().splitlines(keepends=True)
    new = {h: report[s:e] for s, e, h in blocks(report)}
    if not new:
        sys.exit(f"error: no `| dtype |` table in {sys.argv[1]}")
    done = set()
    for s, e, h in reversed(blocks(target)):
        if h in new:
            target[s:e] = new[h]
            done.add(h)
    missing = [h.strip() for h in new if h not in done]
    if missing:
        sys.exit(f"error: {sys.argv[2]} has no table headed {missing[0]}")
    open(sys.argv[2], "w").write("".join(target))
    print(f"{sys.argv[2]}: {len(done)} tables from {sys.argv[1]}")


if __name__ == "__main__":
    main()
