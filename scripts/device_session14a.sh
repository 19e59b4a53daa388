#!/usr/bin/env bash
# Issue 16, the fourteenth session's archive in one call: where a training step's cycles go at the shapes in
# $PHASE_SHAPES (scripts/fused_cuda_phases.py), `pytest -m gpu tests/test_fused_cuda.py`, then with
# REV88_FUSED_KERNEL=cuda at G (default 2) the qualification (all 11 draws), the learners energy design
# (rev88 :16:8, rev88 :0:0, rev88-fused; ROUNDS rounds) and the profile phase into .device/$RUN_ID.
# Returns $OUT/logs.tgz (every log, repacked after each step), $OUT/fused-cuda-phases.json,
# $OUT/run-energy.tgz (kept if the profile is cut off) and $OUT/run.tgz.
# Usage: OUT=dir RUN_ID=h200-fused-cuda-YYYYMMDDx [G=2] [ROUNDS=4] bash scripts/device_session14a.sh
set -u -o pipefail
STEP=cuda-archive PACKED=1
source scripts/device_lib.sh
RUN_ID=${RUN_ID:-h200-fused-cuda-run} RUN_DIR=.device/${RUN_ID:-h200-fused-cuda-run}
TAIL_LINES=30 timed phases 90 python3 scripts/fused_cuda_phases.py ${PHASE_SHAPES:-2:12 4:12 8:12}
cp "$OUT"/fused-cuda-phases.json "$REAL_OUT"/ 2>/dev/null; pack
timed pytest-gpu 150 python3 -m pytest -q -m gpu tests/test_fused_cuda.py -p no:cacheprovider; pack
export REV88_FUSED_KERNEL=cuda REV88_FUSED_CTAS=${G:-2}
mkdir -p .device
timed qualify 120 python3 -m bundle.cli qualify --device cuda --learner rev88-fused --jobs 11 --out "$RUN_DIR"; pack
timed energy "${ENERGY_TIMEOUT:-330}" python3 -m bundle.cli energy --protocol learners --rounds "${ROUNDS:-4}" \
    --record-nvml --out "$RUN_DIR"; pack
tar -C .device --exclude='*.ncu-rep' --exclude='.work' -czf "$REAL_OUT/run-energy.tgz" "$RUN_ID"
timed profile "${PROFILE_TIMEOUT:-150}" python3 -m bundle.cli profile --learner rev88-fused --overlap 6 --out "$RUN_DIR"; pack
tar -C .device --exclude='*.ncu-rep' --exclude='.work' -czf "$REAL_OUT/run.tgz" "$RUN_ID"
du -sh "$RUN_DIR" "$REAL_OUT"/*
