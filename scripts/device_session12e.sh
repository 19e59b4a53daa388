#!/usr/bin/env bash
# Issue 16, the twelfth session's archive, third call: the profile phase into .device/$RUN_ID (carried:
# scripts/device_session12c.sh's qualification and device_session12d.sh's energy design, whose profile
# the former 105 % hit-rate bound refused). Returns $OUT/logs.tgz and $OUT/run.tgz.
# Usage: OUT=dir RUN_ID=h200-fused-cuda-YYYYMMDDx [G=2] bash scripts/device_session12e.sh
set -u -o pipefail
STEP=cuda-archive-c PACKED=1
source scripts/device_lib.sh
RUN_ID=${RUN_ID:-h200-fused-cuda-run} RUN_DIR=.device/${RUN_ID:-h200-fused-cuda-run}
ls "$RUN_DIR" | tee -a "$OUT/calls.txt"
export REV88_FUSED_KERNEL=cuda REV88_FUSED_CTAS=${G:-2}
timed profile "${PROFILE_TIMEOUT:-200}" python3 -m bundle.cli profile --learner rev88-fused --overlap 6 --out "$RUN_DIR"; pack
tar -C .device --exclude='*.ncu-rep' --exclude='.work' -czf "$REAL_OUT/run.tgz" "$RUN_ID"
du -sh "$RUN_DIR" "$REAL_OUT"/*
