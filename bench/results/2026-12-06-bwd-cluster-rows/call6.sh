#!/usr/bin/env bash
# Device call 6: the TFT step at the paper's scale (synthetic panel, hidden 160, lookback 168,
# batch 256) with pins 0001-0069 (call 3's build) beside the PyTorch twin (eager, no
# torch.compile): device_run.sh paper, within what is left of the session's device time.
set -uo pipefail
R=/tmp/call6 && mkdir -p $R
TWIN_COMPILE=0 OUT=$R/run timeout 330 bash bench/scripts/device_run.sh paper > $R/device_run.txt 2>&1
echo "device_run paper rc=$? at ${SECONDS}s" >> $R/status.txt
cat $R/run/status.txt >> $R/status.txt 2>/dev/null
cp $R/run/*.log $R/ 2>/dev/null
tar -C /tmp -czf "$OUT/call6.tgz" call6
cp $R/status.txt "$OUT/status.txt"
cat $R/status.txt
