#!/usr/bin/env bash
# The device run: unpacks .gpu/bins.tar.xz (from build_gpu.sh) and runs the phases given as a
# comma separated list (default: all of them):
#   harness:   the standalone kernel harness (bench/kernel-harness)
#   tests:     vendored candle tests, shim and TFT tests on the GPU
#   sanitizer: compute-sanitizer memcheck + racecheck on the layer-norm GPU tests
#   bench:     gpu_bench + PyTorch bench + f64 numerics check + report/plot, shim A/B
#   tft:       10-epoch TFT runs with the fused kernel and with the composite
#   numerics:  only the f64 PyTorch numerics check (part of bench too)
#   profile:   the TFT step phase by phase (tft --profile), 3-epoch runs, the PyTorch twin
#   paper:     the same at the paper-scale preset on the synthetic panel, with the twin
#   sweep:     the layer norm's forward and backward ops at every hidden size of the fine sweep
#              beside PyTorch's kernels (gpu_bench --sweep + sweep_torch.py; sweep.csv, sweep.png)
#   ops:       time per call of the ops the step profile points at (op_overhead)
#   diag:      where the step goes on the device: tft --profile, ncu by kernel, the twin's profiler
#   pool:      the autograd breakdown at 4096x4096 with freed memory kept and released
#   memory:    pool memory held after backward() through 8 layer norms and its peak, fused vs
#              composite, with both pool settings (memory-*.csv)
#   stats:     the saved-vs-recomputed statistics experiment in .gpu/stats_experiment, if present
#   jit:       first launch on a cold JIT cache (CUDA_CACHE_DISABLE=1): the first fused layer norm
#              forward + backward and the module loads from fatbin and PTX (first_launch), and a
#              1-epoch TFT run
#   family:    rms_norm, softmax_last_dim and rope forward, backward op and training step at
#              LLM shapes, beside PyTorch (family_bench + family_torch.py; family.md), and their
#              numerics against PyTorch in f64 (family_bench --dump-only + family_check.py)
# Every step logs to $OUT/<step>.log; a failing step is recorded, the run goes on.
#   bench/scripts/device_run.sh tests,sanitizer
set -uo pipefail
cd "$(dirname "$0")/../.."
phases=",${1:-harness,tests,sanitizer,bench,memory,tft},"
has() { [[ $phases == *",$1,"* ]]; }
OUT=${OUT:-device-out}
source bench/scripts/device_env.sh
B=/tmp/gpu-bins
rm -rf "$B" && mkdir -p "$B" && tar -C "$B" --strip-components=1 -xJf .gpu/bins.tar.xz
# Binaries rebuilt after the pack (.gpu/extra/<name>.xz, same names as in the pack) replace theirs.
for f in .gpu/extra/*.xz; do
  [ -e "$f" ] && xz -dc "$f" > "$B/$(basename "$f" .xz)" && chmod +x "$B/$(basename "$f" .xz)"
done
status="$OUT/status.txt"
step() { # name timeout cmd...
  local name=$1 t=$2; shift 2
  local start=$SECONDS
  timeout "$t" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  printf '%-28s rc=%-3s %4ss\n' "$name" "$rc" "$((SECONDS - start))" | tee -a "$status"
  grep -E "^test result|passed|failed|ERROR SUMMARY|Error|error:" "$OUT/$name.log" | tail -4 | sed 's/^/    /'
}
# The GPU the reports' titles name (the lent machine may be an H100 where an H200 was asked for).
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)

if has harness; then
  export LN_HARNESS_BIN=/tmp/ln_harness
  step kernel-harness 400 bash bench/kernel-harness/run.sh ${HARNESS_ARGS:-}
  # HARNESS_SWEEP=RxC,RxC: every kernel on these shapes too (the full sweep takes > 10 min).
  if [ -n "${HARNESS_SWEEP:-}" ]; then
    step kernel-sweep 300 "$LN_HARNESS_BIN" --bench-only --sweep --shapes "$HARNESS_SWEEP"
  fi
fi
if has tests; then
  for t in "$B"/candle-nn-* "$B"/candle-core-* "$B"/shim-* "$B"/tft-*; do
    n=$(basename "$t")
    case "$n" in shim-ab_bench|*-bin-*) continue ;; esac
    step "test-$n" 300 "$t" --test-threads=4
  done
fi
if has sanitizer; then
  # Sanitizers on the GPU layer-norm tests (the generated *_gpu variants).
  for tool in memcheck racecheck; do
    step "$tool-candle-nn-layer_norm" 200 compute-sanitizer --tool "$tool" --error-exitcode 1 "$B/candle-nn-layer_norm" --test-threads=1 _gpu
    step "$tool-candle-nn-fused_grads" 300 compute-sanitizer --tool "$tool" --error-exitcode 1 "$B/candle-nn-fused_grads" --test-threads=1 _gpu
    step "$tool-candle-nn-ops" 200 compute-sanitizer --tool "$tool" --error-exitcode 1 "$B/candle-nn-ops" --test-threads=1 ln_ lno_
  done
  # candle-core's column sum and broadcast-block binary kernels (no shared memory: memcheck).
  [ -x "$B/candle-core-tensor_tests" ] && step memcheck-candle-core-tensor_tests 200 compute-sanitizer --tool memcheck --error-exitcode 1 "$B/candle-core-tensor_tests" --test-threads=1 sum_dims binary_broadcast
  # The fused AdamW and LSTM-cell kernels (no shared memory: memcheck only).
  for t in optim rnn; do
    [ -x "$B/candle-nn-$t" ] && step "memcheck-candle-nn-$t" 200 compute-sanitizer --tool memcheck --error-exitcode 1 "$B/candle-nn-$t" --test-threads=1 _gpu
  done
fi

if has bench; then
  step gpu-bench 400 "$B/bench-bin-gpu_bench" --device cuda --csv "$OUT/bench-candle.csv" --dump "$OUT/dump"
  step torch-bench 300 python3 bench/scripts/torch_bench.py --csv "$OUT/bench-torch.csv"
  step torch-check 120 python3 bench/scripts/torch_check.py "$OUT/dump" "$OUT/numerics.csv"
  rm -rf "$OUT/dump"
  step report 60 python3 bench/scripts/report.py "$OUT/bench-candle.csv" "$OUT/bench-torch.csv" "$OUT/report" --title "(${gpu_name:-unknown GPU}, $(date -u +%F))"
fi
# BENCH_EXTRAS=0 skips these (measured in earlier runs, see bench/results).
if has bench && [ "${BENCH_EXTRAS:-1}" = 1 ]; then
  # The same with freed memory handed back to the driver at each synchronize (the driver's
  # default, CANDLE_CUDA_POOL_RETAIN=0): what keeping it in the pool buys.
  step gpu-bench-release-pool 400 "$B/bench-bin-gpu_bench" --device cuda --pool release --csv "$OUT/bench-candle-release-pool.csv"
  step report-release-pool 60 python3 bench/scripts/report.py "$OUT/bench-candle-release-pool.csv" "$OUT/bench-torch.csv" "$OUT/report-release-pool" --title "(${gpu_name:-unknown GPU}, $(date -u +%F), --pool release)"
  step breakdown 120 "$B/bench-bin-gpu_bench" --device cuda --breakdown 4096x4096
  step breakdown-release-pool 120 "$B/bench-bin-gpu_bench" --device cuda --pool release --breakdown 4096x4096
  step shim-ab-bench 300 "$B/shim-ab_bench" --device cuda
fi
if has numerics; then # only the f64 PyTorch check (also part of bench)
  step numerics-dump 120 "$B/bench-bin-gpu_bench" --device cuda --shapes 0 --csv "$OUT/unused.csv" --dump "$OUT/dump"
  step torch-check 120 python3 bench/scripts/torch_check.py "$OUT/dump" "$OUT/numerics.csv"
  rm -rf "$OUT/dump" "$OUT/unused.csv"
fi
if has memory; then
  for pool in retain release; do
    step "memory-$pool" 120 "$B/bench-bin-gpu_bench" --device cuda --pool "$pool" --memory 4096x4096x8 --csv "$OUT/memory-$pool.csv"
  done
  cat "$OUT"/memory-*.log
fi
if has pool; then # only what keeping freed memory in the pool buys (also part of bench)
  step breakdown 120 "$B/bench-bin-gpu_bench" --device cuda --breakdown 4096x4096
  step breakdown-release-pool 120 "$B/bench-bin-gpu_bench" --device cuda --pool release --breakdown 4096x4096
fi
if has profile && [ -x "$B/tft-bin-tft" ]; then
  # Where a TFT training step goes (tft --profile), and the step beside the PyTorch twin.
  step profile-kernel 200 "$B/tft-bin-tft" --device cuda --profile 50 --layer-norm kernel
  step profile-composite 200 "$B/tft-bin-tft" --device cuda --profile 50 --layer-norm composite
  step profile-kernel-event-tracking 200 env CANDLE_CUDA_EVENT_TRACKING=1 "$B/tft-bin-tft" --device cuda --profile 50 --layer-norm kernel
  # PREV_TFT=.gpu/<name>.tar.xz (a tft binary of an earlier commit): the same profile with it
  # (and in `paper`, the paper-size profile and 1-epoch run).
  if [ -n "${PREV_TFT:-}" ] && [ -f "$PREV_TFT" ]; then
    mkdir -p /tmp/prev-tft && tar -C /tmp/prev-tft -xJf "$PREV_TFT"
    step profile-kernel-prev 200 /tmp/prev-tft/tft-bin-tft --device cuda --profile 50 --layer-norm kernel
  fi
  step tft-3-epochs-kernel 200 "$B/tft-bin-tft" --device cuda --epochs 3 --layer-norm kernel --quiet
  step tft-3-epochs-composite 200 "$B/tft-bin-tft" --device cuda --epochs 3 --layer-norm composite --quiet
  if [ -f bench/scripts/tft_torch.py ]; then
    step tft-torch-eager 300 python3 bench/scripts/tft_torch.py --device cuda --epochs 3
    # TWIN_COMPILE=0 skips torch.compile (~2 min of compilation at each size).
    if [ "${TWIN_COMPILE:-1}" = 1 ]; then
      step tft-torch-compile 400 python3 bench/scripts/tft_torch.py --device cuda --epochs 3 --compile
    fi
  fi
fi
if has paper && [ -x "$B/tft-bin-tft" ]; then
  # The realistic size: synthetic panel at the TFT paper's scale (hidden 160, lookback 168,
  # horizon 24, batch 256), ours and the PyTorch twin on the same data (fingerprint checked).
  P=(--dataset synthetic --preset paper)
  step profile-paper-kernel 300 "$B/tft-bin-tft" --device cuda "${P[@]}" --profile 20 --layer-norm kernel
  step profile-paper-composite 300 "$B/tft-bin-tft" --device cuda "${P[@]}" --profile 20 --layer-norm composite
  step tft-paper-kernel 400 "$B/tft-bin-tft" --device cuda "${P[@]}" --epochs 1 --quiet --layer-norm kernel
  step tft-paper-composite 400 "$B/tft-bin-tft" --device cuda "${P[@]}" --epochs 1 --quiet --layer-norm composite
  if [ -n "${PREV_TFT:-}" ] && [ -f "$PREV_TFT" ]; then
    mkdir -p /tmp/prev-tft && tar -C /tmp/prev-tft -xJf "$PREV_TFT"
    step profile-paper-kernel-prev 300 /tmp/prev-tft/tft-bin-tft --device cuda "${P[@]}" --profile 20 --layer-norm kernel
    step tft-paper-kernel-prev 400 /tmp/prev-tft/tft-bin-tft --device cuda "${P[@]}" --epochs 1 --quiet --layer-norm kernel
  fi
  if [ -f bench/scripts/tft_torch.py ]; then
    "$B/tft-bin-tft" "${P[@]}" --dump-data /tmp/synth.csv > "$OUT/synth-dump.log" 2>&1
    fp=$(sed -n 's/^data fingerprint: \([0-9.-]*\).*/\1/p' "$OUT/synth-dump.log" | head -1)
    T=(bench/scripts/tft_torch.py "${P[@]}" --data /tmp/synth.csv --device cuda --epochs 1)
    [ -n "$fp" ] && T+=(--expect-fingerprint "$fp")
    step tft-torch-paper-eager 300 python3 "${T[@]}"
    if [ "${TWIN_COMPILE:-1}" = 1 ]; then
      step tft-torch-paper-compile 400 python3 "${T[@]}" --compile
    fi
  fi
fi
if has sweep; then
  # The layer norm's fine sweep (hidden 64..65536, tensors >= 32 MiB), ours beside PyTorch's
  # kernels, in SWEEP_PASSES passes (default 3; each point the median of its passes, the spread
  # beside it): sweep.csv, sweep-summary in sweep-torch.log, sweep.png.
  csvs=()
  for pass in $(seq 1 "${SWEEP_PASSES:-3}"); do
    step sweep-candle-$pass 300 "$B/bench-bin-gpu_bench" --device cuda --sweep --dtypes f32,bf16,f16 --csv "$OUT/sweep-candle-$pass.csv"
    csvs+=("$OUT/sweep-candle-$pass.csv")
  done
  step sweep-torch 500 python3 bench/scripts/sweep_torch.py --candle-csv "${csvs[@]}" --csv "$OUT/sweep.csv" --plot "$OUT/sweep.png"
fi
if has ops && [ -x "$B/bench-bin-op_overhead" ]; then
  step op-overhead 120 "$B/bench-bin-op_overhead" --device cuda
fi
if has diag && [ -x "$B/tft-bin-tft" ]; then
  # Where the step's time goes on the device: ours (tft --profile: wall vs host-queued time;
  # ncu over the profiled steps only) beside the twin's torch.profiler, default and paper size.
  "$B/tft-bin-tft" --dataset synthetic --preset paper --dump-data /tmp/synth.csv > "$OUT/synth-dump.log" 2>&1
  for size in default paper; do
    S=(); TS=()
    [ $size = paper ] && S=(--dataset synthetic --preset paper) && TS=("${S[@]}" --data /tmp/synth.csv)
    step diag-profile-$size 300 "$B/tft-bin-tft" --device cuda "${S[@]}" --profile 20 --layer-norm kernel
    step diag-ncu-$size 500 ncu --profile-from-start off --metrics gpu__time_duration.sum \
      --cache-control none --clock-control none --csv --print-units base --log-file "$OUT/ncu-$size.csv" \
      "$B/tft-bin-tft" --device cuda "${S[@]}" --profile 1 --layer-norm kernel
    python3 bench/scripts/ncu_kernels.py "$OUT/ncu-$size.csv" --steps 1 > "$OUT/ncu-$size-kernels.txt" 2>&1
    xz -T0 "$OUT/ncu-$size.csv"
    step diag-twin-$size 300 python3 bench/scripts/tft_torch.py --device cuda "${TS[@]}" --profile-steps 10
  done
fi
if has family; then
  step family-candle 500 "$B/bench-bin-family_bench" --device cuda --csv "$OUT/family-candle.csv"
  step family-torch 500 python3 bench/scripts/family_torch.py --candle-csv "$OUT/family-candle.csv" --csv "$OUT/family-torch.csv"
  sed -n '/^| op/,$p' "$OUT/family-torch.log" > "$OUT/family.md"
  step family-dump 300 "$B/bench-bin-family_bench" --device cuda --dump-only "$OUT/family-dump"
  step family-check 200 python3 bench/scripts/family_check.py "$OUT/family-dump" "$OUT/family-numerics.csv"
  rm -rf "$OUT/family-dump"
fi
if has stats && [ -f .gpu/stats_experiment/run.sh ]; then step stats-experiment 300 bash .gpu/stats_experiment/run.sh; fi
if has jit; then
  # CUDA_CACHE_DISABLE=1: the driver's JIT cache is off, every PTX module loaded is compiled,
  # as on a new container or in CI.
  step first-launch 300 env CUDA_CACHE_DISABLE=1 "$B/bench-bin-first_launch" --all-modules
  cat "$OUT/first-launch.log"
  if [ -x "$B/tft-bin-tft" ]; then
    step tft-1-epoch-cold 300 env CUDA_CACHE_DISABLE=1 "$B/tft-bin-tft" --device cuda --epochs 1 --layer-norm kernel --quiet
  fi
fi
if has tft; then
  if [ -x "$B/tft-bin-tft" ]; then
    step tft-kernel 400 "$B/tft-bin-tft" --device cuda --epochs 10 --layer-norm kernel
    step tft-composite 400 "$B/tft-bin-tft" --device cuda --epochs 10 --layer-norm composite
  fi
fi
cat "$status"
# At most 8 files come back from the device: status.txt, device.txt and report.md stay as they
# are, everything else (logs, CSVs, plots) goes into logs.tgz.
(cd "$OUT" && find . -mindepth 1 -maxdepth 1 ! -name status.txt ! -name device.txt ! -name report.md \
  ! -name logs.tgz -printf '%P\n' | tar czf logs.tgz --remove-files -T -)
ls "$OUT"
