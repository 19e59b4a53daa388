#!/usr/bin/env bash
# Device calls of the 2026-12-01 evening measurement (issue 13), back to back on one board:
#   STEP=A  the profile phase the old way (one ncu run at a time) -> $OUT/bench-a.json
#   STEP=B  rev88 reproduce validate,compare,qualify,energy, then qualify the old way -> bench-b.json
#   STEP=C  rev88 reproduce profile (resumes the run folder of B), then validate and compare the old way
# The run folder stays under .device/ on the warm machine between calls and comes back packed each call.
# Usage: OUT=dir RUN_ID=h200-YYYYMMDD STEP=A|B|C bash scripts/device_issue13.sh
set -u -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
RUN_ID=${RUN_ID:-h200-run}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,name,driver_version --format=csv,noheader > "$OUT/gpu-$STEP.txt" 2>&1
cat "$OUT/gpu-$STEP.txt"
bench() {  # phases ways json timeout
  local s; s=$(date +%s)
  timeout -k 10 "$4" python3 benchmarks/reproduce_bench.py run --phases "$1" --ways "$2" --json "$OUT/$3" \
    --work "/tmp/bench-$STEP" > "$OUT/$3.log" 2>&1
  echo "bench $1 $2 rc=$? wall_s=$(( $(date +%s) - s ))" | tee -a "$OUT/calls.txt"; tail -5 "$OUT/$3.log"
}
reproduce() {  # phases timeout
  local s; s=$(date +%s)
  timeout -k 10 "$2" python3 -m bundle.cli reproduce --engine native --device cuda --gpus all --phases "$1" \
    --out ".device/$RUN_ID" > "$OUT/reproduce-$STEP.log" 2>&1
  echo "reproduce $1 rc=$? wall_s=$(( $(date +%s) - s ))" | tee -a "$OUT/calls.txt"; tail -30 "$OUT/reproduce-$STEP.log"
}
case "$STEP" in
  A) bench profile old bench-a.json "${A_TIMEOUT:-575}" ;;
  B) mkdir -p .device; reproduce validate,compare,qualify,energy "${B_TIMEOUT:-470}"
     bench qualify old bench-b.json "${B2_TIMEOUT:-110}" ;;
  C) [ -d ".device/$RUN_ID" ] || { echo "no .device/$RUN_ID on this machine: carry it"; exit 3; }
     reproduce validate,compare,qualify,energy,profile "${C_TIMEOUT:-420}"
     bench validate,compare old bench-c.json "${C2_TIMEOUT:-90}" ;;
esac
if [ -d ".device/$RUN_ID" ]; then
  tar -C .device --exclude='*.ncu-rep' -czf /tmp/run.tgz "$RUN_ID" && split -b 15M -d /tmp/run.tgz "$OUT/run.tgz.part-"
  du -sh ".device/$RUN_ID" /tmp/run.tgz
fi
