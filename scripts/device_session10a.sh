#!/usr/bin/env bash
# Issue 16, first device call of the tenth session: the feature-major CUDA kernel (bundle/fused_cuda.cu)
# at its launch shapes and all 11 draws at the fastest (scripts/fused_cuda_probe.py), the GPU-marked
# tests of the CUDA tool, then a same-board energy sweep of the CUDA tool at G = 1, 2 and 4 against
# rev88 :16:8 (K = 2 rounds) to choose the archive's G.
# Usage: OUT=dir bash scripts/device_session10a.sh
set -u -o pipefail
STEP=cuda-probe
source scripts/device_lib.sh
REV88_PROBE_DEADLINE=${PROBE_DEADLINE:-100} timed probe 170 python3 scripts/fused_cuda_probe.py
timed pytest-gpu 120 python3 -m pytest -q -m gpu tests/test_fused_cuda.py -p no:cacheprovider
mkdir -p "$OUT/sweep"
OUT=$OUT/sweep TAIL_LINES=12 timed sweep "${SWEEP_TIMEOUT:-260}" python3 scripts/fused_energy_sweep.py --rounds 2 \
    --ctas "${SWEEP_CTAS:-1:cuda,2:cuda,4:cuda}" --deadline "${SWEEP_DEADLINE:-200}"
tar -C "$OUT/sweep" -czf "$OUT/sweep-records.tgz" records && rm -rf "$OUT/sweep/records" "$OUT/sweep/.work"
