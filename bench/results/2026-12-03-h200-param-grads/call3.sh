#!/usr/bin/env bash
# Device call 3: the grid beside PyTorch (device_run.sh bench: report.md, report.png) and the
# fine sweep beside PyTorch's kernels (device_run.sh sweep), in the same call, pin 0053's tree:
# the tables of UPSTREAM.md's Numbers section come from here.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
OUT=$OUT bash bench/scripts/device_run.sh bench,sweep > "$OUT/device_run.txt" 2>&1
cat "$OUT/status.txt"
grep -A12 "^dtype dir" "$OUT/sweep-torch.log" 2>/dev/null || tar -xzOf "$OUT/logs.tgz" ./sweep-torch.log | grep -A12 "^dtype dir"

rm -rf "$OUT/dump"
keep="status.txt sweep.csv sweep.png sweep-candle.csv report.md report.png report.csv"
cd "$OUT" && tar -czf /tmp/all.tgz $(ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep")) && \
  ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep") | xargs rm -rf && mv /tmp/all.tgz ./logs-all.tgz && cd - > /dev/null
ls "$OUT"
