# Sourced by the scripts/device_session*.sh call scripts: $OUT, PYTHONPATH, the board and software
# line (gpu-$STEP.txt), and `timed NAME TIMEOUT CMD...` (log to $OUT/NAME.log, rc and wall to calls.txt).
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
# PACKED=1: the logs go to a temporary folder that pack() tars into $REAL_OUT/logs.tgz (the caller's $OUT:
# the device tool brings back at most eight files).
REAL_OUT=$OUT
if [ "${PACKED:-0}" = 1 ]; then OUT=$(mktemp -d)/logs; mkdir -p "$OUT"; fi
pack() { if [ "${PACKED:-0}" = 1 ]; then tar -C "$(dirname "$OUT")" -czf "$REAL_OUT/logs.tgz" logs; fi; }
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=uuid,name,driver_version --format=csv,noheader > "$OUT/gpu-$STEP.txt" 2>&1
python3 -c "import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)" >> "$OUT/gpu-$STEP.txt" 2>&1
cat "$OUT/gpu-$STEP.txt"
timed() {  # name timeout cmd...
  local name=$1 limit=$2; shift 2; local s; s=$(date +%s)
  timeout -k 10 "$limit" "$@" > "$OUT/$name.log" 2>&1
  echo "STEP $name rc=$? wall_s=$(( $(date +%s) - s ))" | tee -a "$OUT/calls.txt"; tail -"${TAIL_LINES:-25}" "$OUT/$name.log"
}
