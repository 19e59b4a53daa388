#!/usr/bin/env bash
# One device call of a full native reproduce on every board of the host (--gpus all), resumable:
# the run folder lives under .device/ (git-ignored; carried back in by the next call), the call's
# log and the packed run folder come back under $OUT.
# Usage: OUT=dir RUN_ID=h200-YYYYMMDD PHASES=validate,compare,qualify,energy,profile CALL=1 bash scripts/device_reproduce.sh
set -u -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
RUN_ID=${RUN_ID:-h200-run}
RUN_DIR=.device/$RUN_ID
PHASES=${PHASES:-validate,compare,qualify,energy,profile}
CALL=${CALL:-1}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p .device
start=$(date +%s)
timeout -k 10 "${CALL_TIMEOUT:-560}" python3 -m bundle.cli reproduce --engine native --device cuda \
  --gpus "${GPUS:-all}" --phases "$PHASES" --out "$RUN_DIR" > "$OUT/reproduce-call$CALL.log" 2>&1
rc=$?
echo "CALL $CALL rc=$rc wall_s=$(( $(date +%s) - start ))" | tee -a "$OUT/reproduce-call$CALL.log"
tail -25 "$OUT/reproduce-call$CALL.log"
# Uncompressed task-scope reports of an interrupted profile stay behind: they are scratch.
tar -C .device --exclude='*.ncu-rep' -czf /tmp/run.tgz "$RUN_ID"
split -b 15M -d /tmp/run.tgz "$OUT/run.tgz.part-"
du -sh "$RUN_DIR" /tmp/run.tgz
exit $rc
