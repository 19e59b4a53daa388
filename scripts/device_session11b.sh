#!/usr/bin/env bash
# Issue 16, the archive call of the eleventh session: a short probe (the default warps and 16 at G = 2, G = 1)
# (scripts/fused_cuda_probe.py), then the protocol with REV88_FUSED_KERNEL=cuda at G (default 2) and
# the default warps: qualification (11 draws at once), the learners energy design (rev88 :16:8,
# rev88 :0:0, rev88-fused; ROUNDS rounds) and the profile phase into .device/$RUN_ID, packed under $OUT.
# Usage: OUT=dir RUN_ID=h200-fused-cuda-YYYYMMDDx [G=2] bash scripts/device_session11b.sh
set -u -o pipefail
STEP=cuda-archive
source scripts/device_lib.sh
RUN_ID=${RUN_ID:-h200-fused-cuda-run}
RUN_DIR=.device/$RUN_ID
export REV88_PROBE_SHAPES=${SHAPES:-cuda:2:0,cuda16:2:0,cuda:1:0}
REV88_PROBE_DEADLINE=${PROBE_DEADLINE:-40} timed probe 90 python3 scripts/fused_cuda_probe.py
export REV88_FUSED_KERNEL=cuda REV88_FUSED_CTAS=${G:-2}
mkdir -p .device
timed qualify 90 python3 -m bundle.cli qualify --device cuda --learner rev88-fused --jobs 11 --out "$RUN_DIR"
timed energy "${ENERGY_TIMEOUT:-330}" python3 -m bundle.cli energy --protocol learners --rounds "${ROUNDS:-4}" \
    --record-nvml --out "$RUN_DIR"
tar -C .device --exclude='*.ncu-rep' --exclude='.work' -czf "$OUT/run-energy.tgz" "$RUN_ID"   # kept if the profile is cut off
timed profile "${PROFILE_TIMEOUT:-150}" python3 -m bundle.cli profile --learner rev88-fused --overlap 6 --out "$RUN_DIR"
tar -C .device --exclude='*.ncu-rep' --exclude='.work' -czf "$OUT/run.tgz" "$RUN_ID"
du -sh "$RUN_DIR" "$OUT/run.tgz"
