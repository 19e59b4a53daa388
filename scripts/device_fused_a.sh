#!/usr/bin/env bash
# Device call: the fused learner's diagnostic (scripts/fused_device.py) then the 11-draw
# qualification with --learner rev88-fused through the CLI (fresh processes, all at once).
# Usage: OUT=dir bash scripts/device_fused_a.sh
set -u -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi -L > "$OUT/gpu.txt" 2>&1
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> "$OUT/gpu.txt" 2>&1
s=$(date +%s)
timeout -k 5 ${DIAG_TIMEOUT:-240} python3 scripts/fused_device.py > "$OUT/fused-device.log" 2>&1; echo "diag rc=$? wall=$(( $(date +%s) - s ))" | tee -a "$OUT/calls.txt"
tail -40 "$OUT/fused-device.log"
s=$(date +%s)
rm -rf .device/fused-qualify
timeout -k 5 ${QUAL_TIMEOUT:-200} python3 -m bundle.cli qualify --device cuda --learner rev88-fused --jobs 11 --out .device/fused-qualify > "$OUT/fused-qualify.log" 2>&1; echo "qualify rc=$? wall=$(( $(date +%s) - s ))" | tee -a "$OUT/calls.txt"
tail -30 "$OUT/fused-qualify.log"
tar -C .device -czf "$OUT/fused-qualify.tgz" fused-qualify
ls -la "$OUT"
