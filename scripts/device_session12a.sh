#!/usr/bin/env bash
# Issue 16, the first call of the twelfth session: where a training step's cycles go
# (scripts/fused_cuda_phases.py at the shapes in $PHASE_SHAPES), written under $OUT.
# Usage: OUT=dir [PHASE_SHAPES="2:12 4:16"] bash scripts/device_session12a.sh
set -u -o pipefail
STEP=phases
source scripts/device_lib.sh
TAIL_LINES=40 timed phases "${PHASE_TIMEOUT:-240}" python3 scripts/fused_cuda_phases.py ${PHASE_SHAPES:-}
