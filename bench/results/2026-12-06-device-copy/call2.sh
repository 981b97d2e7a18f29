#!/usr/bin/env bash
# Device call 2 (2026-12-06): does the vendored `layer_norm_many_rows_16bit` catch a broken
# staged copy? candle-nn's `ops` test binary built here (CUDA, sm_90) with a mutant of
# `stage_slot` (layer_norm_common.cuh): for rows of 8-byte vectors the second 8 bytes of each
# staged slot are zero-filled instead of copied (the 2048/2500-column cases stage in halves only
# at 2500). Expected: ln_many_rows_16bit_gpu fails (at 2001x2500), the other layer-norm tests of
# the binary pass (the reduce's bound is read from the registry in that build).
set -uo pipefail
source bench/scripts/device_env.sh
st="$OUT/status.txt"
xz -dc .gpu/mut/candle-nn-ops-mut.xz > /tmp/ops-mut && chmod +x /tmp/ops-mut
timeout 200 /tmp/ops-mut --test-threads=4 ln_many_rows_16bit_gpu > "$OUT/mut-many-rows.txt" 2>&1
echo "mutant ln_many_rows_16bit_gpu rc=$?" >> "$st"
grep -m3 -E "dx |dw |db |panicked|Error" "$OUT/mut-many-rows.txt" >> "$st"
timeout 300 /tmp/ops-mut --test-threads=4 _gpu > "$OUT/mut-all-gpu.txt" 2>&1
echo "mutant, every _gpu test rc=$?: $(grep -E '^test result' "$OUT/mut-all-gpu.txt")" >> "$st"
grep -E "^test .* FAILED|^    ln_|^    lno_" "$OUT/mut-all-gpu.txt" | head -20 >> "$st"
cat "$st"
