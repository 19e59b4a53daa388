#!/usr/bin/env bash
# Issue 16: where the feature-major CUDA kernel's training launch spends its cycles at G = 1 and 2
# (scripts/fused_stalls.py --tool cuda; Nsight Compute sections, reports and CSV under $OUT).
# Usage: OUT=dir bash scripts/device_session10b.sh
set -u -o pipefail
STEP=cuda-stalls
source scripts/device_lib.sh
TAIL_LINES=6 timed stalls 240 python3 scripts/fused_stalls.py --tool cuda --ctas "${CTAS:-1,2}"
