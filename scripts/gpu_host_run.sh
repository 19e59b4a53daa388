#!/usr/bin/env bash
# gpu_host_run.sh: one whole measurement per call on a GPU host, natively (no container).
#
# usage: scripts/gpu_host_run.sh [options] RUN_DIR [-- COMMAND ...]
#
# Runs, from the repository root, with the project's Python environment:
#   without COMMAND: rev88 reproduce --engine native --device cuda --gpus GPUS [--phases PHASES] --out RUN_DIR
#   with COMMAND:    COMMAND, every argument {run} replaced by RUN_DIR (one phase or design, e.g.
#                    -- rev88 energy --protocol learners --record-nvml --out {run})
# then packs RUN_DIR into OUT/<run-id>.tgz (<run-id> = RUN_DIR's folder name, which must stay the archive's
# folder name: its manifest's run_id). Uncompressed *.ncu-rep files (the scratch of a profile that was
# cut off) are left out; kept reports are stored gzipped. The call's output goes to OUT/call-<N>.log and one
# line per call (command, exit status, wall seconds) to OUT/calls.txt. A call stopped by --timeout or by a
# failure leaves RUN_DIR as it is: the same call again resumes it (phases resume from the jobs done).
# The environment passes through to every job (e.g. REV88_FUSED_KERNEL=cuda REV88_FUSED_CTAS=8).
#
# options:
#   --out DIR         where the log, calls.txt and the packed archive go (default: gpu-host-out)
#   --phases LIST     comma-separated subset of validate,compare,qualify,energy,profile (reproduce only)
#   --gpus SPEC       boards for reproduce: all | N | GPU-uuid,... (default: all; reproduce only)
#   --timeout S       stop the command after S seconds (default 0: no limit)
#   --split MIB       split the packed archive into parts of MIB MiB (OUT/<run-id>.tgz.part-00, ...)
#   --python PY       interpreter that runs rev88 as PY -m bundle.cli (default: python3)
#   -h, --help        print this text
#
# Exit status: the command's (124 when --timeout stopped it); 2 for bad arguments (one line on stderr,
# nothing run, nothing written).
set -u -o pipefail

usage() { sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
refuse() { echo "gpu_host_run.sh: $1 (scripts/gpu_host_run.sh --help)" >&2; exit 2; }

OUT_DIR=gpu-host-out PHASES="" GPUS="" TIMEOUT=0 SPLIT=0 PY=python3 RUN_DIR=""
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --out|--phases|--gpus|--timeout|--split|--python)
      [ $# -ge 2 ] && [ -n "$2" ] || refuse "$1 needs a value"
      case $1 in
        --out) OUT_DIR=$2 ;; --phases) PHASES=$2 ;; --gpus) GPUS=$2 ;;
        --timeout) TIMEOUT=$2 ;; --split) SPLIT=$2 ;; --python) PY=$2 ;;
      esac
      shift 2 ;;
    --) shift; break ;;
    -*) refuse "unknown option $1" ;;
    *) [ -z "$RUN_DIR" ] || refuse "a second RUN_DIR $1: give one run folder, and a command after --"
       RUN_DIR=$1; shift ;;
  esac
done
[ -n "$RUN_DIR" ] || refuse "no RUN_DIR: name the run folder to write (evidence/<run-id> or a folder of that name)"
RUN_ID=$(basename -- "$RUN_DIR")
[[ $RUN_ID =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || refuse "run folder name $RUN_ID is not a run id (letters, digits, . _ -)"
[[ $TIMEOUT =~ ^[0-9]+$ ]] || refuse "--timeout $TIMEOUT is not a whole number of seconds"
[[ $SPLIT =~ ^[0-9]+$ ]] || refuse "--split $SPLIT is not a whole number of MiB"
if [ $# -gt 0 ]; then
  [ -z "$PHASES$GPUS" ] || refuse "--phases and --gpus are options of reproduce: give them in the command after --"
  CMD=() named=0
  for arg in "$@"; do
    if [ "$arg" = "{run}" ]; then CMD+=("$RUN_DIR"); named=1; else CMD+=("$arg"); fi
    if [ "$arg" = rev88 ] && [ ${#CMD[@]} = 1 ]; then CMD=("$PY" -m bundle.cli); fi
  done
  [ $named = 1 ] || refuse "the command after -- does not name the run folder as {run}"
else
  CMD=("$PY" -m bundle.cli reproduce --engine native --device cuda --gpus "${GPUS:-all}" --out "$RUN_DIR")
  [ -z "$PHASES" ] || CMD+=(--phases "$PHASES")
fi

if [ "${CMD[1]:-}" = -m ] && [ "${CMD[2]:-}" = bundle.cli ] && [ ! -f bundle/cli.py ]; then
  refuse "rev88 runs from the repository root (bundle/cli.py is not in $PWD): cd there first"
fi
mkdir -p "$OUT_DIR" || exit 2
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
n=$(( $( (cat "$OUT_DIR/calls.txt" 2>/dev/null || true) | wc -l) + 1 ))
log="$OUT_DIR/call-$n.log"
start=$(date +%s)
if [ "$TIMEOUT" -gt 0 ]; then
  timeout -k 10 "$TIMEOUT" "${CMD[@]}" > "$log" 2>&1
else
  "${CMD[@]}" > "$log" 2>&1
fi
rc=$?
echo "call $n: ${CMD[*]} rc=$rc wall_s=$(( $(date +%s) - start ))" | tee -a "$OUT_DIR/calls.txt"
tail -n 25 "$log"

if [ -d "$RUN_DIR" ]; then
  packed="$OUT_DIR/$RUN_ID.tgz"
  tar -C "$(dirname -- "$RUN_DIR")" --exclude='*.ncu-rep' -czf "$packed.tmp" "$RUN_ID" && mv -f "$packed.tmp" "$packed"
  rm -f "$packed".part-*
  if [ "$SPLIT" -gt 0 ]; then
    split -b "${SPLIT}M" -d "$packed" "$packed.part-" && rm -f "$packed"
  fi
  du -sh "$RUN_DIR" "$OUT_DIR"/"$RUN_ID".tgz* 2>/dev/null
else
  echo "gpu_host_run.sh: $RUN_DIR was not written: nothing packed" >&2
fi
exit $rc
