#!/usr/bin/env bash
# Issue 16, twenty-second session: the pushed exchange (REV88_FUSED_EXCHANGE=push) on a GPU for the first time,
# in one call of under 600 s (device_session20a.sh's two parts, less the energy parts, with G = 6 added):
# cycles per phase and the final state vectors of the pulled and pushed exchange at G = 8 and 4
# (scripts/fused_cuda_phases.py), `pytest -m gpu tests/test_fused_cuda.py`, then the energy sweep of
# rev88 :16:8 against G = 8 pulled and G = 8, 6 and 4 pushed (scripts/fused_energy_sweep.py, two rounds).
# Returns $OUT/logs.tgz (every log, repacked after each step), fused-cuda-phases.json, fused-energy-sweep.json.
# Usage: OUT=dir bash scripts/device_session22a.sh
set -u -o pipefail
STEP=pushed-exchange PACKED=1
source scripts/device_lib.sh
TAIL_LINES=30 timed phases 90 python3 scripts/fused_cuda_phases.py 8:12 8:12:1:EXCHANGE=push 4:12 4:12:1:EXCHANGE=push
cp "$OUT"/fused-cuda-phases.json "$REAL_OUT"/ 2>/dev/null; pack
timed pytest-gpu 150 python3 -m pytest -q -m gpu tests/test_fused_cuda.py -p no:cacheprovider; pack
timed sweep 330 python3 scripts/fused_energy_sweep.py --ctas 8:cuda,8:push,6:push,4:push --rounds 2 --deadline 290
cp "$OUT"/fused-energy-sweep.json "$REAL_OUT"/ 2>/dev/null; pack
