#!/usr/bin/env bash
# Issue 16, last device call of the tenth session: the feature-major kernel (4764c796) on its split
# update (G = 8, 16) and at other warp counts (scripts/fused_cuda_probe.py with REV88_PROBE_SHAPES),
# all 11 draws at the fastest shape, and the GPU-marked tests of the CUDA tool (all 11 draws at
# G = 16 split and G = 4).
# Usage: OUT=dir bash scripts/device_session10e.sh
set -u -o pipefail
STEP=cuda-probe
source scripts/device_lib.sh
REV88_PROBE_SHAPES=${SHAPES:-cuda:8:0,cuda:8:1,cuda:16:1,cuda:16:0,cuda:2:0,cuda16:2:0,cuda8:2:0,cuda16:1:0,cuda16:4:0} \
  REV88_PROBE_DEADLINE=${PROBE_DEADLINE:-90} timed probe 160 python3 scripts/fused_cuda_probe.py
timed pytest-gpu 120 python3 -m pytest -q -m gpu tests/test_fused_cuda.py -p no:cacheprovider
