#!/usr/bin/env bash
# Device call B2 of 2026-12-07's third session (issue 14): the forward at more resident blocks,
# nothing shipped. Call B's H100 attributes put the forward tiers at 48-72 registers, 2 blocks of
# 320 or 512 threads per SM (l320v4, l512v3, l512v4) and 4-9 of 128-256 threads: the forward
# ignored the registry's min_blocks. h_fm = this tree + h_fm.diff (h_fe.diff, and the forward's
# __launch_bounds__ taking the registry's min_blocks, all shipped rows 1) with candidates
# l<lanes>v<vecs>m<min_blocks> and the early-parameter ones with a bound (em).
#   carry: .gpu/var/h_fm.o.xz
set -uo pipefail
source bench/scripts/device_env.sh
call_log callB2
link_harness h_fm || { pack; exit 1; }
shapes=6711x2500,5593x3000,4096x4096,3356x5000,2731x6144,2048x8192,1678x10000,1366x12288,1024x16384
tiers=l64v5,l128v4,l256v3,l256v4,l320v4,l512v3,l512v4,l512v8p,l128v4e,l256v3e,l320v4e,l128v4m12,l128v4m16,l256v3m6,l256v3m8,l256v4m5,l256v4m6,l320v4m3,l320v4m4,l512v3m3,l512v4m3,l512v8m2,l64v5m10,l128v4em9,l256v3em5,l256v4em4,l320v4em3,l512v3em2
for round in 1 2; do
  timeout 120 /tmp/h_fm --bench-only --sweep --dtypes bf16,f32 --tiers $tiers --shapes $shapes > $L/fwd-sweep-$round.txt 2>&1
  echo "fwd sweep round $round rc=$? at ${SECONDS}s" >> "$st"
  pack
done
cat "$st"
