#!/usr/bin/env bash
# Issue 16, the second call of the twelfth session: where a training step's cycles go at the shapes in
# $PHASE_SHAPES (scripts/fused_cuda_phases.py), then the idle-adjusted energy of the CUDA kernel tool at
# G = $SWEEP_CTAS against rev88 :16:8 (scripts/fused_energy_sweep.py, K = $ROUNDS), written under $OUT.
# Usage: OUT=dir [PHASE_SHAPES="2:12 4:16"] [SWEEP_CTAS=2:cuda,4:cuda] [ROUNDS=2] bash scripts/device_session12b.sh
set -u -o pipefail
STEP=phases-sweep
source scripts/device_lib.sh
TAIL_LINES=40 timed phases "${PHASE_TIMEOUT:-150}" python3 scripts/fused_cuda_phases.py ${PHASE_SHAPES:-}
TAIL_LINES=30 timed sweep "${SWEEP_TIMEOUT:-330}" python3 scripts/fused_energy_sweep.py --ctas "${SWEEP_CTAS:-2:cuda,3:cuda,4:cuda}" \
    --rounds "${ROUNDS:-2}" --deadline "${SWEEP_DEADLINE:-260}"
