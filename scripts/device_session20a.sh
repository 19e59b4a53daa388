#!/usr/bin/env bash
# Issue 16, written in the twentieth session (which had no device time) for the next ones: the pushed exchange
# (REV88_FUSED_EXCHANGE=push, fused_cuda.cu PUSH) on a GPU for the first time, in two calls of under 600 s.
#   PART=a: cycles per phase and the final state vector of the pulled and the pushed exchange at G = 8 and 4 on
#           one board (scripts/fused_cuda_phases.py; the state vectors must agree per G: 3a3370bd… at G = 8,
#           4b099968… at G = 4), then `pytest -m gpu tests/test_fused_cuda.py` (all 11 draws at G = 8 pushed,
#           the unsplit bits at G = 4, 5 and 8 pushed, the refusals at G = 2 and 3).
#   PART=b: where a task's idle-adjusted energy goes (scripts/fused_energy_parts.py: training alone, prediction
#           alone at 64 and 128 query rows per block, whole tasks at G = 2 and 8), then the energy sweep of
#           rev88 :16:8 against G = 8 pulled and G = 8 and 4 pushed (scripts/fused_energy_sweep.py, K = 2).
# Outcome (2026-12-05): scripts/device_session22a.sh ran PART=a and the sweep; the pushed exchange kept the bits
# and was slower (docs/measurements/fused-cuda-pushed-exchange-20261205), so no push archive was made and
# fused_energy_parts.py was not run.
# If both look right, the archive call is scripts/device_session14a.sh with the exchange exported:
#   OUT=$OUT RUN_ID=h200-fused-cuda-YYYYMMDDx G=8 ROUNDS=4 PHASE_SHAPES="8:12:1:EXCHANGE=push" \
#       REV88_FUSED_EXCHANGE=push bash scripts/device_session14a.sh
# Everything goes into $OUT/logs.tgz, the JSON results also to $OUT. A PART other than a or b stops in one line.
# Usage: OUT=dir PART=a bash scripts/device_session20a.sh; then OUT=dir PART=b bash scripts/device_session20a.sh
set -u -o pipefail
case "${PART:-}" in
  a|b) ;;
  *) echo "device_session20a.sh: PART=${PART:-} is not a or b; run PART=a first, then PART=b" >&2; exit 2;;
esac
STEP=pushed-exchange-$PART
PACKED=1
source scripts/device_lib.sh
if [ "$PART" = a ]; then
  TAIL_LINES=30 timed phases 200 python3 scripts/fused_cuda_phases.py 8:12 8:12:1:EXCHANGE=push 4:12 4:12:1:EXCHANGE=push
  cp "$OUT"/fused-cuda-phases.json "$REAL_OUT"/ 2>/dev/null; pack
  timed pytest-gpu 300 python3 -m pytest -q -m gpu tests/test_fused_cuda.py -p no:cacheprovider; pack
else
  timed energy-parts 230 python3 scripts/fused_energy_parts.py --shapes 2,8 --rows 64,128 --rounds 2 --active 3
  cp "$OUT"/fused-energy-parts.json "$REAL_OUT"/ 2>/dev/null; pack
  timed sweep 330 python3 scripts/fused_energy_sweep.py --ctas 8:cuda,8:push,4:push --rounds 2 --deadline 240
  cp "$OUT"/fused-energy-sweep.json "$REAL_OUT"/ 2>/dev/null; pack
fi
