#!/usr/bin/env bash
# Device call 1 of 2026-12-07's second session (issue 14), the binaries of the morning's calls
# (.gpu/bins.tar.xz: pins 0001-0071, HEAD a2a3eb1's kernels):
#   1. device_run.sh bench,sweep (BENCH_EXTRAS=0): the grid (gpu_bench + torch_bench + f64
#      numerics + report) and the fine sweep in three passes (each point the median of three
#      passes of ours, PyTorch's kernels and the same-bytes copy), one run, so the grid tables
#      and the sweep come from the same call;
#   2. the CPU beside PyTorch's CPU kernels on this host (16 cores, AVX-512 or not: lscpu), one
#      thread (RAYON_NUM_THREADS=1, torch.set_num_threads(1)) and two threads (a worker of a
#      2-thread rayon pool, as tft runs), f32 and bf16, the shapes: the criterion bench
#      binary of `cargo bench -p ln-bench --bench cpu --no-run` (.gpu/cpu/cpu-bench.xz);
#   3. blocks.sh: the pair backward tiers at more resident blocks per SM (kernel harness h_m2);
#   4. a second three-pass sweep run if the time allows.
# Packed into $OUT/call1.tgz after each step, status.txt beside it.
set -uo pipefail
source bench/scripts/device_env.sh
L=/tmp/call1 && rm -rf $L && mkdir -p $L
st="$L/status.txt"
pack() { tar -C /tmp -czf "$OUT/call1.tgz" call1; cp "$st" "$OUT/status.txt"; }
cp "$OUT/device.txt" $L/
{ lscpu | grep -E "Model name|^CPU\(s\)"; grep -o 'avx512[a-z_0-9]*\|avx2\|f16c' /proc/cpuinfo | sort -u | tr '\n' ' '; } > $L/cpu.txt
BENCH_EXTRAS=0 OUT=$L/run1 timeout 280 bash bench/scripts/device_run.sh bench,sweep > $L/device_run-1.txt 2>&1
echo "device_run bench,sweep rc=$? at ${SECONDS}s" >> "$st"
tar -C $L/run1 -xzf $L/run1/logs.tgz && rm $L/run1/logs.tgz
grep -A9 "^dtype dir" $L/run1/sweep-torch.log >> "$st"
pack
if [ -f .gpu/var/h_m2.o.xz ]; then
  L=$L/blocks bash bench/results/2026-12-07-sweep-passes/blocks.sh
  echo "blocks.sh rc=$? at ${SECONDS}s" >> "$st"
  pack
fi
xz -dc .gpu/cpu/cpu-bench.xz > /tmp/cpu-bench && chmod +x /tmp/cpu-bench
export GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=268435456
export LN_CPU_DTYPES=f32,bf16
for threads in 1 2; do
  crit=$L/criterion-$threads
  if [ $threads = 1 ]; then env=(RAYON_NUM_THREADS=1); else env=(RAYON_NUM_THREADS=2 LN_CPU_IN_POOL=1); fi
  (cd bench && env "${env[@]}" CRITERION_HOME=$crit timeout 200 /tmp/cpu-bench --bench '^layer_norm_cpu/fused_(fwd|bwd|fwd_bwd)/' \
    --warm-up-time 0.5 --measurement-time 1 --noplot > $L/cpu-candle-$threads.txt 2>&1)
  echo "cpu candle $threads thread(s) rc=$? at ${SECONDS}s" >> "$st"
  timeout 120 python3 bench/scripts/cpu_torch.py --threads $threads --reps 7 --dtypes f32,bf16 --criterion $crit > $L/cpu-$threads.md 2>&1
  echo "cpu torch $threads thread(s) rc=$? at ${SECONDS}s" >> "$st"
  rm -rf $crit
  pack
done
if [ $SECONDS -lt 420 ]; then
  OUT=$L/run2 timeout 150 bash bench/scripts/device_run.sh sweep > $L/device_run-2.txt 2>&1
  echo "device_run sweep (second run) rc=$? at ${SECONDS}s" >> "$st"
  tar -C $L/run2 -xzf $L/run2/logs.tgz && rm $L/run2/logs.tgz
  grep -A9 "^dtype dir" $L/run2/sweep-torch.log >> "$st"
fi
pack
cat "$st"
