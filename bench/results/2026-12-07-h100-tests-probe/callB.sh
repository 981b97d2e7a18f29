#!/usr/bin/env bash
# Device call B of 2026-12-07's third session (issue 14): experiments, nothing shipped.
#   1. size probe: the shipped table (kernel harness h_fe's bench lines = what the host
#      launches) at tensors of 32 MiB and of 128 MiB (4x the rows), bf16 and f32, beside
#      PyTorch's kernels and a same-bytes copy at the same points (size_probe.py): is the H200's
#      gap to the copy per launch (ramp-up, the last wave) or per byte?
#   2. forward candidates (h_fe = this tree + h_fe.diff): the tiers with the next row's loads
#      issued first (`p`, ../2026-12-07-sweep-passes/fwd-p-tiers.diff), with the thread's weight
#      and bias loaded once before the first row (`e`) and both (`pe`), beside the shipped ones,
#      at bf16 and f32 rows of 2500-16384 columns (32 MiB), 2 rounds;
#   3. the CPU fusion cap at one thread (../2026-12-07-sweep-passes/cpu-fuse-max.diff, binary
#      .gpu/cpu/cpu-fuse.xz), PyTorch's CPU kernels at one thread beside it.
#   carry: .gpu/var/h_fe.o.xz .gpu/cpu
set -uo pipefail
source bench/scripts/device_env.sh
call_log callB
here=bench/results/2026-12-07-h100-tests-probe
link_harness h_fe || { pack; exit 1; }
bash $here/size_probe.sh /tmp/h_fe $L # (its lines were here when the call ran)
echo "size probe at ${SECONDS}s" >> "$st"
pack
shapes=6711x2500,5593x3000,4096x4096,3356x5000,2731x6144,2048x8192,1678x10000,1366x12288,1024x16384
tiers=l64v3,l64v5,l128v2,l128v4,l256v3,l256v4,l320v4,l512v3,l512v4,l512v8p,l1024v8,l64v3p,l64v5p,l128v2p,l128v4p,l256v3p,l256v4p,l320v4p,l512v3p,l512v4p,l128v2e,l128v4e,l256v3e,l256v4e,l320v4e,l512v3e,l512v4e,l128v4pe,l256v4pe,l320v4pe,l512v4pe,l512v8pe
for round in 1 2; do
  timeout 110 /tmp/h_fe --bench-only --sweep --dtypes bf16,f32 --tiers $tiers --shapes $shapes > $L/fwd-sweep-$round.txt 2>&1
  echo "fwd sweep round $round rc=$? at ${SECONDS}s" >> "$st"
  pack
done
xz -dc .gpu/cpu/cpu-fuse.xz > /tmp/cpu-fuse && chmod +x /tmp/cpu-fuse
export GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=268435456
export RAYON_NUM_THREADS=1 LN_CPU_SHAPES=2048x1024,512x4096,257x5000,64x16384
for round in 1 2; do
  [ $round = 2 ] && [ $SECONDS -gt 440 ] && break # a second round only if the device time allows
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
cat "$st"
