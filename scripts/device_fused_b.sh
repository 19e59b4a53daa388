#!/usr/bin/env bash
# Device call: the rev88-fused learner under the protocol, in one run folder on one board:
# qualification (11 draws at once), the learners energy design (rev88 :16:8, rev88 :0:0,
# rev88-fused; K = 5) and the profile phase with --learner rev88-fused. Packs the folder into $OUT.
# Usage: OUT=dir RUN_ID=h200-fused-YYYYMMDD bash scripts/device_fused_b.sh
set -u -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
RUN_ID=${RUN_ID:-h200-fused-run}
RUN_DIR=.device/$RUN_ID
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p .device
REV88="python3 -m bundle.cli"
step() {  # step NAME TIMEOUT_S ARGS...
  local name=$1 limit=$2; shift 2
  local s; s=$(date +%s)
  timeout -k 10 "$limit" $REV88 "$@" > "$OUT/$name.log" 2>&1
  echo "STEP $name rc=$? wall_s=$(( $(date +%s) - s ))" | tee -a "$OUT/steps.txt"
  tail -15 "$OUT/$name.log"
}
step qualify 90 qualify --device cuda --learner rev88-fused --jobs 11 --out "$RUN_DIR"
step energy "${ENERGY_TIMEOUT:-420}" energy --protocol learners --record-nvml --out "$RUN_DIR"
step profile "${PROFILE_TIMEOUT:-140}" profile --learner rev88-fused --overlap 6 --out "$RUN_DIR"
tar -C .device --exclude='*.ncu-rep' -czf /tmp/run.tgz "$RUN_ID"
split -b 15M -d /tmp/run.tgz "$OUT/run.tgz.part-"
du -sh "$RUN_DIR" /tmp/run.tgz
