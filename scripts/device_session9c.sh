#!/usr/bin/env bash
# Issue 16, the last call of this session: the profile phase of the CUDA tool's archive (carried in
# .device/$RUN_ID from scripts/device_session9b.sh, same variables: REV88_FUSED_KERNEL=cuda,
# REV88_FUSED_CTAS=$G), then a same-board energy sweep of the CUDA tool at G = 1 and 4 against
# rev88 :16:8 (K = 2), to place the G = 2 of the archive.
# Usage: OUT=dir RUN_ID=h200-fused-cuda-YYYYMMDD G=2 bash scripts/device_session9c.sh
set -u -o pipefail
STEP=cuda-profile
source scripts/device_lib.sh
RUN_ID=${RUN_ID:-h200-fused-cuda-run}
RUN_DIR=.device/$RUN_ID
REV88_FUSED_KERNEL=cuda REV88_FUSED_CTAS=${G:-2} timed profile "${PROFILE_TIMEOUT:-220}" \
    python3 -m bundle.cli profile --learner rev88-fused --overlap 6 --out "$RUN_DIR"
tar -C .device --exclude='*.ncu-rep' --exclude='.work' -czf "$OUT/run.tgz" "$RUN_ID"
mkdir -p "$OUT/sweep"
OUT=$OUT/sweep TAIL_LINES=10 timed sweep "${SWEEP_TIMEOUT:-200}" python3 scripts/fused_energy_sweep.py --rounds 2 \
    --ctas 1:cuda,4:cuda --deadline "${SWEEP_DEADLINE:-130}"
tar -C "$OUT/sweep" -czf "$OUT/sweep-records.tgz" records && rm -rf "$OUT/sweep/records" "$OUT/sweep/.work"
