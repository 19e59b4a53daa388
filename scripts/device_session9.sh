#!/usr/bin/env bash
# Issue 16, call 1 of this session: the CUDA kernel tool's launch shapes and draws
# (scripts/fused_cuda_probe.py), then, when its 11 draws are the frozen ones, a same-board energy
# sweep of the CUDA tool at G = 4, 8, 16 against rev88 :16:8 and the Triton default (K = 2).
set -u
STEP=cuda-probe
source scripts/device_lib.sh
timed probe 300 python3 scripts/fused_cuda_probe.py
ok=$(python3 -c "import json; d=json.load(open('$OUT/fused-cuda-probe.json'))['draws'] or {}; print(sum(bool(r.get('predictions_equal_frozen_hash')) for r in d.get('draws', [])))")
echo "draws equal frozen: $ok/11"
if [ "$ok" = 11 ]; then
  mkdir -p "$OUT/sweep"
  OUT=$OUT/sweep TAIL_LINES=12 timed sweep 330 python3 scripts/fused_energy_sweep.py --rounds 2 \
      --ctas 1,4:cuda,8:cuda,16:cuda --deadline 250
  tar -C "$OUT/sweep" -czf "$OUT/sweep-records.tgz" records && rm -rf "$OUT/sweep/records" "$OUT/sweep/.work"
fi
