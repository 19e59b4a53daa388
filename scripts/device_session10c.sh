#!/usr/bin/env bash
# Issue 16, the archive call of the tenth session: a short probe of the feature-major CUDA kernel
# (scripts/fused_cuda_probe.py: launch shapes in order until PROBE_DEADLINE, then all 11 draws at the
# fastest), then, when the 11 draws are the frozen ones, the protocol with REV88_FUSED_KERNEL=cuda at
# the G that the energy model picks among G <= 4: qualification (11 draws at once) and the learners
# energy design (rev88 :16:8, rev88 :0:0, rev88-fused; ROUNDS rounds) into .device/$RUN_ID, packed
# under $OUT. The profile phase is a second call (scripts/device_session10d.sh).
# G*: the least ms/task x (1.1 + G), the model of scripts/device_session9b.sh; this session's sweep of
# the kernel before its lane remap (docs/measurements/fused-cuda-probe-20261203c/sweep) put G = 2 lowest.
# Usage: OUT=dir RUN_ID=h200-fused-cuda-YYYYMMDDx bash scripts/device_session10c.sh
set -u -o pipefail
STEP=cuda-probe
source scripts/device_lib.sh
RUN_ID=${RUN_ID:-h200-fused-cuda-run}
RUN_DIR=.device/$RUN_ID
REV88_PROBE_DEADLINE=${PROBE_DEADLINE:-45} timed probe 110 python3 scripts/fused_cuda_probe.py
pick=$(python3 - "$OUT/fused-cuda-probe.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
draws = (d.get("draws") or {}).get("draws") or []
ok = sum(bool(r.get("predictions_equal_frozen_hash")) for r in draws)
rows = [r for r in d["timings"] if r["learner"] == "cuda" and r.get("predictions_equal_frozen_hash")
        and r.get("ms_per_task_median") and r["ctas"] <= 4 and not r["split"]]
best = min(rows, key=lambda r: r["ms_per_task_median"] * (1.1 + r["ctas"])) if rows and ok == 11 else None
print(best["ctas"] if best else 0)
PY
)
echo "G* = $pick (0: no protocol run)" | tee -a "$OUT/calls.txt"
if [ "$pick" != 0 ]; then
  export REV88_FUSED_KERNEL=cuda REV88_FUSED_CTAS=$pick
  mkdir -p .device
  timed qualify 90 python3 -m bundle.cli qualify --device cuda --learner rev88-fused --jobs 11 --out "$RUN_DIR"
  timed energy "${ENERGY_TIMEOUT:-400}" python3 -m bundle.cli energy --protocol learners --rounds "${ROUNDS:-4}" \
      --record-nvml --out "$RUN_DIR"
  tar -C .device --exclude='*.ncu-rep' -czf "$OUT/run.tgz" "$RUN_ID"
  du -sh "$RUN_DIR" "$OUT/run.tgz"
fi
