#!/usr/bin/env bash
# Issue 16, written in the eighteenth session (which had no device time) for the next device call: cycles per
# phase of several whole kernel sources on one board in one call. scripts/fused_cuda_phases.py takes SRC= only
# for a source the verifier lists, so each trial in $TRIALS (paths of whole .cu files) is copied over
# bundle/fused_cuda.cu in turn and measured at $SHAPES; the first trial's run also measures $BASE_SHAPES
# (e.g. "8:12::SRC=.trial/v0.cu", the shipped source). Each run's fused-cuda-phases.json and log go to
# logs/<trial name>/; the tree's source is put back at the end, also after a failure. Everything is packed into
# $OUT/logs.tgz. TRIALS empty, SHAPES empty, a trial path that is no file, or two trials of one file name stop
# the call in one line (exit 2) before anything runs; a trial whose phase run fails makes the exit 1 after the
# others ran. The shipped source runs in the first trial's process only, so later trials are compared with it
# on the same board but from another process.
# Usage: OUT=dir TRIALS=".trial/v1.cu .trial/v2.cu" SHAPES="8:12 4:12" \
#        BASE_SHAPES="8:12::SRC=.trial/v0.cu 4:12::SRC=.trial/v0.cu" bash scripts/device_session18a.sh
set -u -o pipefail
refuse() { echo "device_session18a.sh: $1" >&2; exit 2; }
TRIALS=${TRIALS:-}
[ -n "${TRIALS// /}" ] || refuse "TRIALS names no kernel source; give it as paths of whole .cu files"
[ -n "${SHAPES:-}" ] || refuse "SHAPES names no launch shape; give it as fused_cuda_phases.py shapes, e.g. \"8:12 4:12\""
names=""
for t in $TRIALS; do
  [ -f "$t" ] || refuse "trial $t is no file; give TRIALS as paths of whole .cu files"
  case " $names " in *" $(basename "$t" .cu) "*) refuse "two trials are named $(basename "$t" .cu); their logs would share a folder";; esac
  names="$names $(basename "$t" .cu)"
done
STEP=trials
PACKED=1
source scripts/device_lib.sh
KEPT=$(mktemp)
cp bundle/fused_cuda.cu "$KEPT"
trap 'cp "$KEPT" bundle/fused_cuda.cu' EXIT
BASE=${BASE_SHAPES:-}
TOP=$OUT
FAILED=""
for t in $TRIALS; do
  name=$(basename "$t" .cu)
  cp "$t" bundle/fused_cuda.cu
  export OUT=$TOP/$name
  mkdir -p "$OUT"
  sha256sum bundle/fused_cuda.cu > "$OUT/source.txt"
  # $BASE and $SHAPES unquoted: each shape is one argument
  TAIL_LINES=30 timed phases "${PHASE_TIMEOUT:-240}" python3 scripts/fused_cuda_phases.py $BASE $SHAPES
  grep -q "rc=0 " "$OUT/calls.txt" || FAILED="$FAILED $name"
  BASE=""
  export OUT=$TOP
  pack
done
[ -z "$FAILED" ] || { echo "device_session18a.sh: the phase run failed for:$FAILED (logs in logs.tgz)" >&2; exit 1; }
