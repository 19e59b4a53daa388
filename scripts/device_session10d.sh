#!/usr/bin/env bash
# Issue 16, the second archive call of the tenth session: the profile phase of the CUDA tool's
# archive (carried in .device/$RUN_ID from scripts/device_session10c.sh, same variables), then, as
# time allows, where its training launch spends its cycles at G = 1 and 2 (scripts/fused_stalls.py).
# Usage: OUT=dir RUN_ID=h200-fused-cuda-YYYYMMDDx G=2 bash scripts/device_session10d.sh
set -u -o pipefail
STEP=cuda-profile
source scripts/device_lib.sh
RUN_ID=${RUN_ID:-h200-fused-cuda-run}
RUN_DIR=.device/$RUN_ID
REV88_FUSED_KERNEL=cuda REV88_FUSED_CTAS=${G:-2} timed profile "${PROFILE_TIMEOUT:-220}" \
    python3 -m bundle.cli profile --learner rev88-fused --overlap 6 --out "$RUN_DIR"
tar -C .device --exclude='*.ncu-rep' --exclude='.work' -czf "$OUT/run.tgz" "$RUN_ID"
if [ "${STALLS_TIMEOUT:-150}" -gt 0 ]; then
  mkdir -p "$OUT/stalls"
  OUT=$OUT/stalls TAIL_LINES=4 timed stalls "${STALLS_TIMEOUT:-150}" python3 scripts/fused_stalls.py --tool cuda --ctas 1,2
fi
