#!/usr/bin/env bash
# Issue 16, the twelfth session's archive, second call: the learners energy design (rev88 :16:8, rev88 :0:0,
# rev88-fused with REV88_FUSED_KERNEL=cuda at G, default 2; ROUNDS rounds) and the profile phase into
# .device/$RUN_ID, which holds scripts/device_session12c.sh's qualification (carried, or left there by
# that call). Returns $OUT/logs.tgz, $OUT/run-energy.tgz (kept if the profile is cut off) and $OUT/run.tgz.
# Usage: OUT=dir RUN_ID=h200-fused-cuda-YYYYMMDDx [G=2] [ROUNDS=4] bash scripts/device_session12d.sh
set -u -o pipefail
STEP=cuda-archive-b PACKED=1
source scripts/device_lib.sh
RUN_ID=${RUN_ID:-h200-fused-cuda-run} RUN_DIR=.device/${RUN_ID:-h200-fused-cuda-run}
ls "$RUN_DIR" | tee -a "$OUT/calls.txt"
export REV88_FUSED_KERNEL=cuda REV88_FUSED_CTAS=${G:-2}
timed energy "${ENERGY_TIMEOUT:-360}" python3 -m bundle.cli energy --protocol learners --rounds "${ROUNDS:-4}" \
    --record-nvml --out "$RUN_DIR"; pack
tar -C .device --exclude='*.ncu-rep' --exclude='.work' -czf "$REAL_OUT/run-energy.tgz" "$RUN_ID"
timed profile "${PROFILE_TIMEOUT:-150}" python3 -m bundle.cli profile --learner rev88-fused --overlap 6 --out "$RUN_DIR"; pack
tar -C .device --exclude='*.ncu-rep' --exclude='.work' -czf "$REAL_OUT/run.tgz" "$RUN_ID"
du -sh "$RUN_DIR" "$REAL_OUT"/*
