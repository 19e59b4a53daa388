#!/usr/bin/env bash
# Device calls of the 2026-12-02 (eighth) session (issue 13), back to back on one board:
#   STEP=1  rev88 reproduce --phases validate,compare,qualify,energy at the shipped defaults
#   STEP=2  rev88 reproduce --phases profile (the default whole-process GPU lock), resumable
#   STEP=3  the profile resumed if STEP 2 was cut, then the old ways of validate, compare and
#           qualify on the same board (benchmarks/reproduce_bench.py run --ways old)
# The run folder is .device/$RUN_ID (git-ignored; carried back by a later call); each call packs it
# under $OUT (scripts/device_reproduce.sh).
# Usage: OUT=dir STEP=1|2|3 RUN_ID=h200-YYYYMMDD bash scripts/device_session8.sh
set -u -o pipefail
TAIL_LINES=30
source "$(dirname "$0")/device_lib.sh"
export RUN_ID=${RUN_ID:-h200-run}
case "$STEP" in
  1) PHASES=validate,compare,qualify,energy CALL=1 CALL_TIMEOUT=${CALL_TIMEOUT:-560} bash scripts/device_reproduce.sh ;;
  2) PHASES=profile CALL=2 CALL_TIMEOUT=${CALL_TIMEOUT:-560} bash scripts/device_reproduce.sh ;;
  3) if [ ! -f ".device/$RUN_ID/profile/profiles.json.gz" ]; then
       PHASES=profile CALL=3 CALL_TIMEOUT=${CALL_TIMEOUT:-400} bash scripts/device_reproduce.sh
     fi
     timed bench-old "${BENCH_TIMEOUT:-200}" python3 benchmarks/reproduce_bench.py run \
       --phases validate,compare,qualify --ways old --json "$OUT/bench-old.json" --work /tmp/bench-work ;;
esac
