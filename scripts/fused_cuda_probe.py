"""Issue 16 probe: rev88-fused with kernel tool ``cuda`` (bundle/fused_cuda.cu through CuPy) against
the Triton kernels and the frozen learner on one GPU, each launch shape in a fresh child.

    OUT=$OUT PYTHONPATH=. python3 scripts/fused_cuda_probe.py

Reuses scripts/fused_device.py's children (fresh process, peak allocated bytes, WARMUP + REPEATS
invocations timed between synchronisations with the host clock, draw-0 predictions hash against the
frozen one); a ``--learner cuda`` child builds a :class:`bundle.fused_cuda.CudaFusedTask` with
``--ctas G`` and ``--split 0|1``. Then all 11 draws at the fastest CUDA shape whose draw-0
predictions equal the frozen ones. Writes ``$OUT/fused-cuda-probe.json``. A measurement for the
issue's notes; the verifier does not read it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fused_device  # noqa: E402  (sets CUBLAS_WORKSPACE_CONFIG before torch is imported)

# (learner, ctas, split) in priority order; learner "fused" is the Triton kernel at its defaults.
# "cudaN": N warps per block instead of bundle.fused_cuda.WARPS. REV88_PROBE_SHAPES items may add a fourth
# field, the cluster update: 1 or 0 (absent: the host's default rule).
SHAPES = (("cuda", 1, 0), ("cuda", 2, 0), ("cuda", 4, 0), ("cuda", 8, 0), ("cuda", 8, 1), ("cuda", 16, 1),
          ("cuda", 3, 0), ("cuda", 6, 0), ("cuda", 32, 1), ("cuda8", 2, 0), ("cuda8", 4, 0), ("cuda16", 1, 0),
          ("cuda6", 4, 0))
if os.environ.get("REV88_PROBE_SHAPES"):   # "learner:ctas:split,..." instead of the list above, e.g. "cuda16:1:0,cuda:1:0"
    SHAPES = tuple((parts[0], int(parts[1]), int(parts[2]), *(int(x) for x in parts[3:4])) for parts in (
        item.split(":") for item in os.environ["REV88_PROBE_SHAPES"].split(",")))
if os.environ.get("REV88_PROBE_BASELINES"):   # the frozen learner and the Triton default first, same board
    SHAPES = (("frozen", None, None), ("fused", 1, None), *SHAPES)
DEADLINE_S = float(os.environ.get("REV88_PROBE_DEADLINE", "300"))
_make_task_triton = fused_device._make_task


def _make_task(learner: str, inputs: dict, ctas, warps, slices=None):
    if not learner.startswith("cuda"):
        return _make_task_triton(learner, inputs, ctas, warps, slices)
    from bundle.fused_cuda import WARPS, CudaFusedTask  # noqa: PLC0415

    warps_ = int(learner[4:]) if learner[4:] else WARPS   # "cuda8": 8 warps per block
    cluster = os.environ.get("REV88_PROBE_CLUSTER", "")
    return CudaFusedTask(**inputs, device="cuda", ctas=ctas, split=bool(int(os.environ.get("REV88_PROBE_SPLIT", "0"))),
                         warps=warps_, cluster=None if cluster == "" else bool(int(cluster)))


fused_device._make_task = _make_task


def draws_child(ctas: int, split: int) -> dict:
    """All 11 draws with CudaFusedTask(ctas, split): predictions against the frozen hashes and files."""
    import numpy as np  # noqa: PLC0415

    from bundle.data import load_draw  # noqa: PLC0415
    from bundle.fused_cuda import CudaFusedTask  # noqa: PLC0415

    rows = []
    for draw in fused_device.DRAWS:
        row: dict = {"draw": draw}
        try:
            task = CudaFusedTask(**load_draw(draw).learner_inputs(), device="cuda", ctas=ctas, split=bool(split))
            task.run()
            pred, meta = task.outputs()
            frozen = fused_device._frozen_meta(draw)
            file_pred = np.load(fused_device.FROZEN / "predictions" / f"draw-{draw:02d}.npy")
            row |= {"predictions_equal_frozen_hash": meta["predictions_sha256"] == frozen["predictions_sha256"],
                    "flips_vs_frozen_file": int((file_pred != pred).sum()),
                    "initial_parameter_equal_frozen": meta["initial_parameter_sha256"] == frozen["initial_parameter_sha256"],
                    "state_vector_sha256": meta["state_vector_sha256"]}
            task.run()
            row["repeatable"] = task.state_hashes()["state_vector_sha256"] == meta["state_vector_sha256"]
        except Exception as exc:
            row |= fused_device._error(exc)
        rows.append(row)
    return {"ctas": ctas, "split": split, "draws": rows}


def main() -> int:
    started = time.perf_counter()
    import torch  # noqa: PLC0415

    if not torch.cuda.is_available():
        print("fused_cuda_probe: torch sees no CUDA GPU; run this on the GPU host", file=sys.stderr)
        return 2
    from bundle import fused_cuda  # noqa: PLC0415

    out_dir = Path(os.environ.get("OUT") or ".")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "fused-cuda-probe.json"
    result: dict = {"schema": "fused-cuda-probe/1", "warmup": fused_device.WARMUP, "repeats": fused_device.REPEATS,
                    "timing": "perf_counter between torch.cuda.synchronize() calls, one invocation (train + predict) "
                              "each, draw 0, each shape in its own fresh child process",
                    "environment": fused_device._environment(torch) | {
                        "cuda_kernel_source_sha256": fused_cuda.kernel_source_sha256(),
                        "cupy": fused_cuda.cupy_versions()},
                    "timings": [], "draws": None}
    for learner, ctas, split, *cluster in SHAPES:
        left = DEADLINE_S - (time.perf_counter() - started)
        ident = {"learner": learner, "ctas": ctas, "split": split, "cluster": cluster[0] if cluster else None}
        if left < fused_device.MIN_CHILD_S:
            record = {"skipped": f"{left:.0f} s left"}
        else:
            args = ["--child", "timing", "--learner", learner] + ([] if ctas is None else ["--ctas", str(ctas)])
            os.environ["REV88_PROBE_SPLIT"] = str(split or 0)
            os.environ["REV88_PROBE_CLUSTER"] = str(cluster[0]) if cluster else ""
            record = _run(args, min(90.0, left))
        record = {**ident, **record}
        result["timings"].append(record)
        print(f"{learner:6s} ctas={ctas} split={split} cluster={ident['cluster']}: ms/task {record.get('ms_per_task_median', 'ERR')} peak "
              f"{record.get('peak_allocated_bytes')} B, draw 0 equal frozen {record.get('predictions_equal_frozen_hash')} "
              f"{(record.get('error') or record.get('skipped') or '')[:300]}", flush=True)
        fused_device._write_atomic(path, result)
    ok = [r for r in result["timings"] if r["learner"] == "cuda" and r.get("predictions_equal_frozen_hash")
          and r.get("ms_per_task_median") and r.get("cluster") is None]
    if ok:
        best = min(ok, key=lambda r: r["ms_per_task_median"])
        left = DEADLINE_S + 120.0 - (time.perf_counter() - started)
        record = _run(["--child", "draws", "--ctas", str(best["ctas"]), "--split", str(best["split"])], max(20.0, left))
        result["draws"] = record
        rows = record.get("draws") or []
        print(f"draws cuda ctas={best['ctas']} split={best['split']}: equal frozen hash "
              f"{sum(bool(r.get('predictions_equal_frozen_hash')) for r in rows)}/11, flips "
              f"{[r.get('flips_vs_frozen_file') for r in rows]} {record.get('error', '')}", flush=True)
    result["wall_s"] = time.perf_counter() - started
    fused_device._write_atomic(path, result)
    print(f"wrote {path}")
    return 0


def _run(args: list[str], timeout: float) -> dict:
    """This script as a fresh child (``args`` begin with ``--child``)."""
    return fused_device._run_child(args[1:], timeout, script=__file__)


def _child(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", choices=("timing", "draws"))
    parser.add_argument("--learner", default="cuda")
    parser.add_argument("--ctas", type=int)
    parser.add_argument("--split", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        if args.child == "draws":
            record = draws_child(args.ctas, args.split)
        else:
            record = fused_device.timing_child("fused" if args.learner == "fused" else args.learner, args.ctas, None)
    except Exception as exc:
        print(json.dumps(fused_device._finite(fused_device._error(exc))))
        return 1
    print(json.dumps(fused_device._finite(record)))
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]) if "--child" in sys.argv[1:] else main())
