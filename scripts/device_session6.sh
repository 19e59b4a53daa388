#!/usr/bin/env bash
# Device calls of the 2026-12-01 late session (issues 13 and 16), back to back on one board:
#   STEP=1  scripts/fused_device.py (frozen vs fused ctas=1 vs the multi-CTA kernel; 11 draws at G),
#           then scripts/l2_context_probe.py (serialised :16:8 task profile with and without
#           eleven idle CUDA contexts under ncu)
#   STEP=2  scripts/device_fused_b.sh (qualify, learners energy design, profile of rev88-fused)
# Usage: OUT=dir STEP=1|2 bash scripts/device_session6.sh
set -u -o pipefail
source "$(dirname "$0")/device_lib.sh"
case "$STEP" in
  1) timed fused-device 420 python3 scripts/fused_device.py
     mkdir -p .device && cp "$OUT/fused-device.json" .device/ 2>/dev/null
     timed l2-probe "${PROBE_TIMEOUT:-340}" python3 scripts/l2_context_probe.py --scope task --rounds 2 \
       --deadline "${PROBE_DEADLINE:-320}" ;;
  2) OUT=$OUT RUN_ID=${RUN_ID:-h200-fused-run} bash scripts/device_fused_b.sh ;;
esac
