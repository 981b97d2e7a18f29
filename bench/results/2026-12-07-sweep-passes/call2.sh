#!/usr/bin/env bash
# Device call 2 of 2026-12-07's second session (issue 14): two experiments, nothing shipped yet
# (run in the order 2, 1).
#   1. fwd-p: the forward tiers with the next row's loads issued before the current row's
#      reductions (prefetch flag), kernel harness h_fp = this tree plus fwd-p-tiers.diff (sweep
#      candidates l64v3p ... l512v4p beside the shipped tiers), bf16 and f32 rows of 2500-16384
#      columns (tensors >= 32 MiB), 2 rounds;
#   2. cpu-fuse: the CPU layer norm at one thread with the next row's sums fused into the loop
#      that writes this row's output only below LN_CPU_FUSE_MAX columns (cpu-fuse-max.diff, an
#      experiment binary: unset = the shipped rule, every row of >= 2048 columns), f32, the wide
#      shapes, 2 alternating rounds, PyTorch's CPU kernels at one thread beside them;
#   3. every kernel-harness test of h_m2b (h_m2 of call 1 with the harness sizing a sweep tier's
#      shared memory by the instance that runs, 5403808): the 16-bit tests that stopped h_m2.
set -uo pipefail
source bench/scripts/device_env.sh
call_log call2
xz -dc .gpu/cpu/cpu-fuse.xz > /tmp/cpu-fuse && chmod +x /tmp/cpu-fuse
export GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=268435456
export RAYON_NUM_THREADS=1 LN_CPU_SHAPES=2048x1024,512x4096,257x5000,64x16384
for round in 1 2; do
  [ $round = 2 ] && [ $SECONDS -gt ${CPU_ROUND2_BEFORE:-120} ] && break # a second round only if the device time allows
  for fm in shipped 4096 8192; do
    if [ $fm = shipped ]; then unset LN_CPU_FUSE_MAX; else export LN_CPU_FUSE_MAX=$fm; fi
    (cd bench && timeout 100 /tmp/cpu-fuse --bench '^layer_norm_cpu/fused_(fwd|bwd)/' --warm-up-time 0.5 \
      --measurement-time 1 --noplot --discard-baseline 2>/dev/null) |
      awk -v l=$fm '/^layer_norm_cpu\// {name=$1; sub("layer_norm_cpu/","",name)} /^ +time:/ && name!="" {v=$4; u=$5; if(u=="ms") v=v*1000; printf "%s %s %.1f\n", l, name, v; name=""}' >> $L/cpu-fuse-$round.txt
  done
  unset LN_CPU_FUSE_MAX
  timeout 60 python3 bench/scripts/cpu_torch.py --threads 1 --reps 7 --shapes $LN_CPU_SHAPES > $L/cpu-torch-$round.md 2>&1
  echo "cpu round $round at ${SECONDS}s" >> "$st"
  pack
done
link_harness h_fp || { pack; exit 1; }
shapes=6711x2500,5593x3000,4096x4096,3356x5000,2731x6144,2048x8192,1678x10000,1366x12288,1024x16384
tiers=l64v3,l64v5,l128v2,l128v4,l256v3,l256v4,l320v4,l512v3,l512v4,l512v8p,l1024v8,l64v3p,l64v5p,l128v2p,l128v4p,l256v3p,l256v4p,l320v4p,l512v3p,l512v4p
for round in 1 2; do
  [ $round = 2 ] && [ $SECONDS -gt 200 ] && break
  timeout 70 /tmp/h_fp --bench-only --sweep --dtypes bf16,f32 --tiers $tiers --shapes $shapes > $L/fwd-sweep-$round.txt 2>&1
  echo "fwd sweep round $round rc=$? at ${SECONDS}s" >> "$st"
done
pack
if link_harness h_m2b; then
  timeout 200 /tmp/h_m2b --no-bench > $L/tests-h_m2b.txt 2>&1
  echo "tests h_m2b rc=$?: $(tail -1 $L/tests-h_m2b.txt) at ${SECONDS}s" >> "$st"
fi
pack
cat "$st"
