#!/usr/bin/env bash
# Device call 8: pin 0069 with a cold L2. The harness's bench switch LN_FLUSH_L2=1 also times the
# backward after a kernel that reads 256 MiB (flush + backward minus the flush alone), so that
# neither the previous call's rows nor anything else is in L2 when the statistics kernel starts.
# Builds (`nvcc -O3 -gencode arch=compute_90,code=sm_90 -c bench/kernel-harness/ln_harness.cu`,
# with the switch): h_fbase = the statistics rows in order (main before pin 0069),
# h_frev = main (pin 0069). Two alternating rounds.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
R=/tmp/call8 && mkdir -p $R
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$R/device.txt" 2>&1
for v in h_fbase h_frev; do
  (xz -dc ".gpu/var/$v.o.xz" > "/tmp/$v.o" && nvcc -arch=sm_90 "/tmp/$v.o" -o "/tmp/$v") &
done
wait
W16=512x32768,2048x32768,420x40000,256x65536,560x30001,257x65535
W32=420x20000,256x32768,1024x32768,128x65536,280x30001,129x65535
export LN_FLUSH_L2=1
for round in 1 2; do
  for v in h_fbase h_frev; do
    { timeout 60 /tmp/$v --bench-only --dtypes bf16 --shapes "$W16"
      timeout 60 /tmp/$v --bench-only --dtypes f32 --shapes "$W32"; } 2>&1 | grep -E "^(bench|cold)" > $R/bench-$v-$round.txt
    echo "bench $v round $round at ${SECONDS}s: $(wc -l < $R/bench-$v-$round.txt) lines" >> $R/status.txt
  done
done
tar -C /tmp -czf "$OUT/call8.tgz" call8
cp $R/status.txt "$OUT/status.txt"
cat $R/status.txt
