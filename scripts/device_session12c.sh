#!/usr/bin/env bash
# Issue 16, the twelfth session's archive, first call: where a training step's cycles go at the shapes in
# $PHASE_SHAPES (scripts/fused_cuda_phases.py), `pytest -m gpu tests/test_fused_cuda.py`, then the
# qualification (all 11 draws) with REV88_FUSED_KERNEL=cuda at G (default 2) into .device/$RUN_ID.
# Returns at most three files (the device tool brings back eight): $OUT/logs.tgz (every log, repacked
# after each step) and $OUT/run-qualify.tgz. scripts/device_session12d.sh continues the same run folder.
# Usage: OUT=dir RUN_ID=h200-fused-cuda-YYYYMMDDx [G=2] bash scripts/device_session12c.sh
set -u -o pipefail
STEP=cuda-archive-a PACKED=1
source scripts/device_lib.sh
RUN_ID=${RUN_ID:-h200-fused-cuda-run} RUN_DIR=.device/${RUN_ID:-h200-fused-cuda-run}
TAIL_LINES=30 timed phases 60 python3 scripts/fused_cuda_phases.py ${PHASE_SHAPES:-2:12:1 4:12:1 3:12:1}; cp "$OUT"/fused-cuda-phases.json "$REAL_OUT"/ 2>/dev/null; pack
timed pytest-gpu 150 python3 -m pytest -q -m gpu tests/test_fused_cuda.py -p no:cacheprovider; pack
export REV88_FUSED_KERNEL=cuda REV88_FUSED_CTAS=${G:-2}
mkdir -p .device
timed qualify 120 python3 -m bundle.cli qualify --device cuda --learner rev88-fused --jobs 11 --out "$RUN_DIR"; pack
tar -C .device --exclude='*.ncu-rep' --exclude='.work' -czf "$REAL_OUT/run-qualify.tgz" "$RUN_ID"
