#!/usr/bin/env bash
# Issue 16, the first call of the eleventh session: the cluster kernel (bundle/fused_cuda.cu with the
# thread-block-cluster update, weight gradients on four warps, logits and loss per warp, the next
# rows lifted during W0) probed at launch shapes with and without the cluster, all 11 draws at the
# fastest, `pytest -m gpu tests/test_fused_cuda.py`, then, when the 11 draws are the frozen ones, the
# protocol at the G the energy model picks among G <= 4 (as scripts/device_session10c.sh):
# qualification and the learners energy design into .device/$RUN_ID, packed under $OUT.
# Usage: OUT=dir RUN_ID=h200-fused-cuda-YYYYMMDDx bash scripts/device_session11a.sh
set -u -o pipefail
STEP=cuda-cluster
source scripts/device_lib.sh
RUN_ID=${RUN_ID:-h200-fused-cuda-run}
RUN_DIR=.device/$RUN_ID
export REV88_PROBE_SHAPES=${SHAPES:-cuda:2:0,cuda:2:0:0,cuda:1:0,cuda:4:0,cuda:3:0,cuda12:2:0,cuda12:4:0,cuda:8:0,cuda:4:0:0,cuda12:1:0}
REV88_PROBE_DEADLINE=${PROBE_DEADLINE:-80} timed probe 140 python3 scripts/fused_cuda_probe.py
timed pytest-gpu 120 python3 -m pytest -q -m gpu tests/test_fused_cuda.py -p no:cacheprovider
pick=$(python3 - "$OUT/fused-cuda-probe.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
draws = (d.get("draws") or {}).get("draws") or []
ok = sum(bool(r.get("predictions_equal_frozen_hash")) for r in draws)
rows = [r for r in d["timings"] if r["learner"] == "cuda" and r.get("predictions_equal_frozen_hash")
        and r.get("ms_per_task_median") and r["ctas"] <= 4 and not r["split"] and r.get("cluster") is None]
best = min(rows, key=lambda r: r["ms_per_task_median"] * (1.1 + r["ctas"])) if rows and ok == 11 else None
print(best["ctas"] if best else 0)
PY
)
echo "G* = $pick (0: no protocol run)" | tee -a "$OUT/calls.txt"
if [ "$pick" != 0 ] && [ "${ARCHIVE:-1}" = 1 ]; then
  export REV88_FUSED_KERNEL=cuda REV88_FUSED_CTAS=$pick
  mkdir -p .device
  timed qualify 90 python3 -m bundle.cli qualify --device cuda --learner rev88-fused --jobs 11 --out "$RUN_DIR"
  timed energy "${ENERGY_TIMEOUT:-330}" python3 -m bundle.cli energy --protocol learners --rounds "${ROUNDS:-4}" \
      --record-nvml --out "$RUN_DIR"
  tar -C .device --exclude='*.ncu-rep' -czf "$OUT/run.tgz" "$RUN_ID"
  du -sh "$RUN_DIR" "$OUT/run.tgz"
fi
