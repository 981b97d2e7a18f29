#!/usr/bin/env bash
# The size probe (callB.sh step 1, README "Call B"): a linked kernel harness HARNESS's bench
# lines (the kernels the host launches) at tensors of 32 MiB and of 128 MiB (4x the rows), bf16
# and f32, and PyTorch's kernels with a same-bytes copy at the same points (size_probe.py), into
# DIR/probe-{bf16,f32}.txt and DIR/probe-torch-{bf16,f32}.txt. Run on the device, from the
# repository root, after device_env.sh. ~35 s.
#   bench/results/2026-12-07-h100-tests-probe/size_probe.sh HARNESS DIR
here=bench/results/2026-12-07-h100-tests-probe
h=$1 d=$2
s16=6711x2500,4096x4096,2048x8192,1678x10000,1366x12288,1024x16384,512x32768
b16=26844x2500,16384x4096,8192x8192,6712x10000,5464x12288,4096x16384,2048x32768
s32=3355x2500,2048x4096,1024x8192,839x10000,683x12288,512x16384
b32=13420x2500,8192x4096,4096x8192,3356x10000,2732x12288,2048x16384
timeout 60 "$h" --bench-only --dtypes bf16 --shapes $s16,$b16 > "$d/probe-bf16.txt" 2>&1
timeout 60 "$h" --bench-only --dtypes f32 --shapes $s32,$b32 > "$d/probe-f32.txt" 2>&1
timeout 120 python3 $here/size_probe.py --dtypes bf16 --shapes $s16,$b16 > "$d/probe-torch-bf16.txt" 2>&1
timeout 60 python3 $here/size_probe.py --dtypes f32 --shapes $s32,$b32 > "$d/probe-torch-f32.txt" 2>&1
