#!/usr/bin/env bash
# Device call (2026-12-04, ~16:45 UTC), an experiment, not shipped: f32 rows of odd width
# through the backward `s` tiers' span path (pin 0054's spans, pin 0055's 16-byte accesses), as
# 16-bit rows take it. h_f32s.o: the kernel harness built from pin 0056's kernels with the f32
# `words` instances compiled (layer_norm.cu: LN_WORDS kept for f32) and chosen for f32 rows of
# odd width in the `s` tiers (`experiment.diff`); h_w2.o: pin 0056. Tests and memcheck of
# h_f32s, both benched alternating at f32 odd widths (and aligned / bf16 controls), two rounds.
bash bench/kernel-harness/ab.sh h_w2 h_f32s \
  2796x3001,5591x3001,6711x2501,4194x4001,2158x7777,1678x9999,1079x7777,560x15001,1119x15001,8385x2001,5593x3000,4096x4096 2
