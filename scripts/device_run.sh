#!/usr/bin/env bash
# Runs bundle phases natively on a GPU host and packs the run archive under $OUT.
# Usage: OUT=dir RUN_ID=h200-YYYYMMDD PHASES="validate compare qualify profile" bash scripts/device_run.sh
# Each phase's log is kept; a failed phase does not stop the others (phases resume on rerun).
set -u -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
LOGS=/tmp/device-logs; mkdir -p "$LOGS"
RUN_ID=${RUN_ID:-h200-run}
RUN_DIR=${RUN_DIR:-/tmp/$RUN_ID}
PHASES=${PHASES:-"validate compare qualify profile"}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
REV88="timeout -k 10 ${PHASE_TIMEOUT:-3000} python3 -m bundle.cli"
status=0
for phase in $PHASES; do
  start=$(date +%s.%N)
  case $phase in
    validate) $REV88 validate --out "$RUN_DIR" ;;
    compare)  $REV88 compare --out "$RUN_DIR" ;;
    qualify)  $REV88 qualify --device cuda --out "$RUN_DIR" ;;
    profile)  $REV88 profile --out "$RUN_DIR" --repeats "${PROFILE_REPEATS:-3}" ;;
    energy-original)    $REV88 energy --out "$RUN_DIR" --protocol original --record-nvml ;;
    energy-interleaved) $REV88 energy --out "$RUN_DIR" --protocol interleaved --record-nvml ${ENERGY_ARGS:-} ;;
    gputests) python3 -m pytest -q -m gpu -p no:cacheprovider ${GPU_TESTS:-tests} ;;
    bench)    python3 benchmarks/learner_bench.py --device cuda && python3 benchmarks/workspace_bench.py ;;
    *) echo "unknown phase $phase"; false ;;
  esac 2>&1 | tee "$LOGS/$phase.log"
  rc=${PIPESTATUS[0]}
  echo "PHASE $phase rc=$rc wall_s=$(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$start" "$(date +%s.%N)")" | tee -a "$OUT/phases.txt"
  [ "$rc" = 0 ] || status=1
done
cp "$OUT/phases.txt" "$LOGS/" 2>/dev/null
# The device returns at most 8 files of 16 MiB: pack archive + logs and split.
tar -C /tmp -czf /tmp/pack.tgz "$(basename "$RUN_DIR")" device-logs
split -b 15M -d /tmp/pack.tgz "$OUT/pack.tgz.part-"
ls -la "$OUT"; du -sh "$RUN_DIR"; find "$RUN_DIR" -type f | sort | head -100
exit $status
