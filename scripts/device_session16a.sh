#!/usr/bin/env bash
# Issue 16, the first call of the sixteenth session: cycles per phase of the push update and of the
# product task sizes (scripts/fused_cuda_phases.py at the shapes in $PHASE_SHAPES), then one Nsight
# Compute pass with source counters per instruction at $STALL_CTAS with the -D options $STALL_DEFINES
# (scripts/fused_stalls.py); everything packed into $OUT/logs.tgz.
# Usage: OUT=dir PHASE_SHAPES="4:12 4:12::FT=8,BT=8" STALL_CTAS=4 STALL_DEFINES=FT=8,BT=8 bash scripts/device_session16a.sh
set -u -o pipefail
STEP=phases
PACKED=1
source scripts/device_lib.sh
TAIL_LINES=80 timed phases "${PHASE_TIMEOUT:-300}" python3 scripts/fused_cuda_phases.py ${PHASE_SHAPES:-}
if [ -n "${STALL_CTAS:-}" ]; then
  TAIL_LINES=5 timed stalls 200 python3 scripts/fused_stalls.py --tool cuda --ctas "$STALL_CTAS" --defines="${STALL_DEFINES:-}"
  gzip -f "$OUT"/*.ncu-rep 2>/dev/null
fi
pack
