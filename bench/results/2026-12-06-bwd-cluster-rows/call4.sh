#!/usr/bin/env bash
# Device call 4: the TFT training step with pins 0001-0069 (call 3's build) beside the PyTorch
# twin (eager, no torch.compile): device_run.sh profile. Packed in call4.tgz.
set -uo pipefail
R=/tmp/call4 && mkdir -p $R
TWIN_COMPILE=0 OUT=$R/run timeout 320 bash bench/scripts/device_run.sh profile > $R/device_run.txt 2>&1
echo "device_run profile rc=$? at ${SECONDS}s" >> $R/status.txt
cat $R/run/status.txt >> $R/status.txt 2>/dev/null
tar -C /tmp -czf "$OUT/call4.tgz" call4
cp $R/status.txt "$OUT/status.txt"
cat $R/status.txt
