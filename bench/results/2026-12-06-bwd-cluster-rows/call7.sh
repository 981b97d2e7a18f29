#!/usr/bin/env bash
# Device call 7: what pin 0069 changes in memory traffic. ncu without cache control (the L2 as
# the previous kernel left it), DRAM bytes read and L2 hit rate of the split backward's two
# kernels in the harness's back-to-back bench loop (launches 40-47 of the process, after the
# warm-up), h_cl2 (the statistics rows in order, as main before 0069) against h_rev (reverse).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
R=/tmp/call7 && mkdir -p $R
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$R/device.txt" 2>&1
for v in h_cl2 h_rev; do
  (xz -dc ".gpu/var/$v.o.xz" > "/tmp/$v.o" && nvcc -arch=sm_90 "/tmp/$v.o" -o "/tmp/$v") &
done
wait
for v in h_cl2 h_rev; do
  for p in bf16:512x32768 f32:128x65536; do
    timeout 60 ncu --cache-control none -k regex:split --launch-skip 40 --launch-count 8 \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct \
      /tmp/$v --bench-only --dtypes "${p%%:*}" --shapes "${p#*:}" > "$R/ncu-$v-${p/:/-}.txt" 2>&1
    echo "ncu $v $p rc=$? at ${SECONDS}s" >> $R/status.txt
  done
done
tar -C /tmp -czf "$OUT/call7.tgz" call7
cp $R/status.txt "$OUT/status.txt"
cat $R/status.txt
