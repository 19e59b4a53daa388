#!/usr/bin/env bash
# Device calls of the 2026-12-02 session (issue 16), back to back on one board:
#   STEP=1  scripts/fused_device.py: the frozen learner and the fused one at each launch shape of
#           its SWEEP (programs, warps, product slices), then the 11-draw check at the grid G
#   STEP=2  scripts/fused_energy_sweep.py: idle-adjusted mJ/task of rev88 :16:8 and rev88-fused at
#           G = $SWEEP_CTAS (default 1,2,4,8), K = $SWEEP_ROUNDS rounds
#   STEP=3  scripts/device_fused_b.sh (qualify, learners energy design, profile of rev88-fused)
# Usage: OUT=dir STEP=1|2|3 bash scripts/device_session7.sh
set -u -o pipefail
TAIL_LINES=40
source "$(dirname "$0")/device_lib.sh"
case "$STEP" in
  1) timed fused-device "${SWEEP_TIMEOUT:-420}" python3 scripts/fused_device.py ;;
  2) timed energy-sweep "${SWEEP_TIMEOUT:-560}" python3 scripts/fused_energy_sweep.py \
       --rounds "${SWEEP_ROUNDS:-3}" --ctas "${SWEEP_CTAS:-1,2,4,8}" --deadline "${SWEEP_DEADLINE:-500}"
     rm -rf "$OUT/.work"
     tar -C "$OUT" -czf "$OUT/records.tgz" records && rm -rf "$OUT/records" ;;
  3) OUT=$OUT RUN_ID=${RUN_ID:-h200-fused-run} bash scripts/device_fused_b.sh ;;
esac
