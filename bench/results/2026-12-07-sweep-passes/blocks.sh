#!/usr/bin/env bash
# The pair (`sq`/`sqa`) backward tiers at more resident blocks per SM, in the kernel harness
# (.gpu/var/h_m2.o.xz: this tree's kernels at a2a3eb1 plus the sweep candidates of branch
# blocks2's layer_norm_tiers.cuh: the shipped pair tiers with min_blocks doubled, and pairs of
# 384-1024 lanes with two vectors a thread): every harness test, then bf16 and f16 rows of
# 3000-16384 columns (tensors >= 32 MiB), the shipped tier beside the candidates, 2 rounds.
set -uo pipefail
source bench/scripts/device_env.sh
L=${L:-/tmp/blocks} && mkdir -p $L
st="$L/status.txt"
link_harness h_m2 || exit 1
timeout 200 /tmp/h_m2 --no-bench > $L/tests-h_m2.txt 2>&1
echo "tests h_m2 rc=$?: $(tail -1 $L/tests-h_m2.txt) at ${SECONDS}s" >> "$st"
grep "^attr" $L/tests-h_m2.txt > $L/attr.txt 2>/dev/null
shapes=5593x3000,3356x5000,2731x6144,2048x8192,1678x10000,1366x12288,1024x16384
tiers=l128v3sq,l128v3sqm8,l256v3sq,l256v3sqm4,l256v2sqa,l320v2sqa,l384v2sqa,l512v2sqa,l512v2sqam2,l320v4sq,l320v4sqm2,l512v4sq,l512v4sqm2,l640v2sq,l768v2sq,l768v2sqa,l1024v2sq,l1024v4s
for round in 1 2; do
  timeout 100 /tmp/h_m2 --bench-only --sweep --dtypes bf16,f16 --tiers $tiers --shapes $shapes > $L/sweep-$round.txt 2>&1
  echo "sweep round $round rc=$? at ${SECONDS}s" >> "$st"
done
