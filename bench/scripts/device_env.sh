# Sourced by the device-call scripts (device_run.sh, bench/kernel-harness/ab.sh, the callN.sh of
# bench/results): CUDA 13.0 and the driver's libraries on the paths, $OUT/device.txt (when, which
# GPU, driver, memory), and `link_harness NAME`, which links .gpu/var/NAME.o.xz (a kernel harness
# object compiled here with `nvcc -O3 -gencode arch=compute_90,code=sm_90 -c ln_harness.cu`) into
# /tmp/NAME; and `call_log NAME` for the callN.sh scripts (see below).
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$OUT/device.txt" 2>&1
link_harness() {
  xz -dc ".gpu/var/$1.o.xz" > "/tmp/$1.o" && nvcc -arch=sm_90 "/tmp/$1.o" -o "/tmp/$1" ||
    { echo "link $1 failed" | tee -a "$OUT/status.txt"; return 1; }
}
# call_log NAME: a call's log folder /tmp/NAME, emptied, with device.txt; sets L (the folder) and
# st (its status.txt); `pack` then puts the folder into $OUT/NAME.tgz and status.txt beside it.
call_log() {
  CALL=$1 L=/tmp/$1 && rm -rf "$L" && mkdir -p "$L"
  st="$L/status.txt"
  cp "$OUT/device.txt" "$L/"
}
pack() { tar -C /tmp -czf "$OUT/$CALL.tgz" "$CALL"; cp "$st" "$OUT/status.txt"; }
