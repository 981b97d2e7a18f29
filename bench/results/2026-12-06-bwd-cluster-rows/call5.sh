#!/usr/bin/env bash
# Device call 5: the split backward over chunks of rows (kernel harness only: LN_SPLIT_CHUNK_MB=m,
# the two kernels per chunk of rows whose x and dy take at most m MiB, so that the dx kernel's
# second read finds the chunk in L2). Build h_chunk = main (pin 0069) + the switch
# (`nvcc -O3 -gencode arch=compute_90,code=sm_90 -c bench/kernel-harness/ln_harness.cu`).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
R=/tmp/call5 && mkdir -p $R
st="$R/status.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$R/device.txt" 2>&1
xz -dc .gpu/var/h_chunk.o.xz > /tmp/h_chunk.o && nvcc -arch=sm_90 /tmp/h_chunk.o -o /tmp/h_chunk || echo "link failed" >> "$st"
LN_SPLIT_CHUNK_MB=8 timeout 170 /tmp/h_chunk --no-bench > $R/tests-chunk8.txt 2>&1 &
timeout 170 /tmp/h_chunk --no-bench > $R/tests-chunk0.txt 2>&1 &
wait
for v in chunk0 chunk8; do
  echo "tests $v at ${SECONDS}s: $(tail -1 $R/tests-$v.txt)" >> "$st"
  grep -m10 FAIL $R/tests-$v.txt >> "$st"
done
W16=512x32768,2048x32768,420x40000,256x65536,560x30001,257x65535
W32=420x20000,256x32768,1024x32768,128x65536,280x30001,129x65535
for round in 1 2; do
  for v in chunk0 chunk12 chunk24; do
    { [ $v = chunk0 ] && unset LN_SPLIT_CHUNK_MB || export LN_SPLIT_CHUNK_MB=${v#chunk}
      timeout 60 /tmp/h_chunk --bench-only --dtypes bf16 --shapes "$W16"
      timeout 60 /tmp/h_chunk --bench-only --dtypes f32 --shapes "$W32"; } 2>&1 | grep "^bench" > $R/bench-$v-$round.txt
    echo "bench $v round $round at ${SECONDS}s: $(wc -l < $R/bench-$v-$round.txt) lines" >> "$st"
  done
done
tar -C /tmp -czf "$OUT/call5.tgz" call5
cp "$st" "$OUT/status.txt"
cat "$st"
