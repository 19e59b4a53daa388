#!/usr/bin/env bash
# Issue 16, one device call: the CUDA kernel tool's launch shapes and all 11 draws
# (scripts/fused_cuda_probe.py), then, when the 11 draws are the frozen ones, the protocol with
# REV88_FUSED_KERNEL=cuda at the G that the energy model below picks: qualification (11 draws at
# once) and the learners energy design (rev88 :16:8, rev88 :0:0, rev88-fused; K rounds) into
# .device/$RUN_ID, packed under $OUT.
# G*: among the shapes the fixture launches (split exactly when G >= 16) whose draw-0 predictions
# are the frozen ones, the least ms/task x (1.1 + G): idle-adjusted power modelled as ~1.1 W plus
# ~1.0 W per busy SM, fitted to the Triton kernels' same-board sweep (G = 1: 21.7 ms, 46.9 mJ;
# G = 8: 7.34 ms, 69.2 mJ; docs/measurements/fused-energy-sweep-20261202b).
# Usage: OUT=dir RUN_ID=h200-fused-cuda-YYYYMMDD bash scripts/device_session9b.sh
set -u -o pipefail
STEP=cuda-probe
source scripts/device_lib.sh
RUN_ID=${RUN_ID:-h200-fused-cuda-run}
RUN_DIR=.device/$RUN_ID
REV88_PROBE_DEADLINE=${PROBE_DEADLINE:-90} timed probe 150 python3 scripts/fused_cuda_probe.py
pick=$(python3 - "$OUT/fused-cuda-probe.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
draws = (d.get("draws") or {}).get("draws") or []
ok = sum(bool(r.get("predictions_equal_frozen_hash")) for r in draws)
rows = [r for r in d["timings"] if r["learner"] == "cuda" and r.get("predictions_equal_frozen_hash")
        and r.get("ms_per_task_median") and bool(r["split"]) == (r["ctas"] >= 16)]
best = min(rows, key=lambda r: r["ms_per_task_median"] * (1.1 + r["ctas"])) if rows and ok == 11 else None
print(best["ctas"] if best else 0)
PY
)
echo "G* = $pick (0: no protocol run)" | tee -a "$OUT/calls.txt"
if [ "$pick" != 0 ]; then
  export REV88_FUSED_KERNEL=cuda REV88_FUSED_CTAS=$pick
  mkdir -p .device
  timed qualify 90 python3 -m bundle.cli qualify --device cuda --learner rev88-fused --jobs 11 --out "$RUN_DIR"
  timed energy "${ENERGY_TIMEOUT:-400}" python3 -m bundle.cli energy --protocol learners --rounds "${ROUNDS:-5}" \
      --record-nvml --out "$RUN_DIR"
  tar -C .device --exclude='*.ncu-rep' -czf "$OUT/run.tgz" "$RUN_ID"
  du -sh "$RUN_DIR" "$OUT/run.tgz"
fi
