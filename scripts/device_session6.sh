#!/usr/bin/env bash
# Device calls of the 2026-12-01 late session (issues 13 and 16), back to back on one board:
#   STEP=1  scripts/fused_device.py (frozen vs fused ctas=1 vs the multi-CTA kernel; 11 draws at G),
#           then scripts/l2_context_probe.py (serialised :16:8 task profile with and without
#           eleven idle CUDA contexts under ncu)
#   STEP=2  scripts/device_fused_b.sh (qualify, learners energy design, profile of rev88-fused)
# Usage: OUT=dir STEP=1|2 bash scripts/device_session6.sh
set -u -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,name,driver_version --format=csv,noheader > "$OUT/gpu-$STEP.txt" 2>&1
python3 -c "import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)" >> "$OUT/gpu-$STEP.txt" 2>&1
cat "$OUT/gpu-$STEP.txt"
timed() {  # name timeout cmd...
  local name=$1 limit=$2; shift 2; local s; s=$(date +%s)
  timeout -k 10 "$limit" "$@" > "$OUT/$name.log" 2>&1
  echo "STEP $name rc=$? wall_s=$(( $(date +%s) - s ))" | tee -a "$OUT/calls.txt"; tail -25 "$OUT/$name.log"
}
case "$STEP" in
  1) timed fused-device 200 python3 scripts/fused_device.py
     mkdir -p .device && cp "$OUT/fused-device.json" .device/ 2>/dev/null
     timed l2-probe "${PROBE_TIMEOUT:-340}" python3 scripts/l2_context_probe.py --scope task --rounds 2 \
       --deadline "${PROBE_DEADLINE:-320}" ;;
  2) OUT=$OUT RUN_ID=${RUN_ID:-h200-fused-run} bash scripts/device_fused_b.sh ;;
esac
