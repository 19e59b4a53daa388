"""Probe for issue 16: the register-resident multi-CTA kernel (scripts/fused_regs_kernels.py) against
the shipped rev88-fused kernels and the frozen learner, on one GPU, each shape in a fresh child.

    OUT=$OUT PYTHONPATH=. python3 scripts/fused_regs_probe.py           # GPU host
    PYTHONPATH=. python3 scripts/fused_regs_probe.py --cpu-check 4      # triton's interpreter, draw 0
    OUT=$OUT PYTHONPATH=. python3 scripts/fused_regs_probe.py --plan tf32x3   # tensor-core products (GPU)

The GPU run reuses scripts/fused_device.py's children (fresh process, peak allocated bytes,
WARMUP + REPEATS invocations timed between synchronisations, draw-0 predictions hash against the
frozen one); a ``--kernel regs`` child swaps ``grid_train_kernel`` of its FusedTask for the probe
kernel (same signature, buffers and barrier protocol). Then all 11 draws at the fastest probe shape
whose draw-0 predictions equal the frozen ones. Writes ``$OUT/fused-regs-probe.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fused_device  # noqa: E402  (sets CUBLAS_WORKSPACE_CONFIG before torch is imported)

# (kernel, ctas, warps, update chunk) in priority order; "shipped" is bundle/fused_kernels.py as it is;
# the chunk is fused_learner.GRID_REDUCE_BLOCK (floats per iteration of the update loop; None: as shipped).
SHAPES = (("shipped", 1, None, None), ("shipped", 8, 8, None), ("regs", 8, 8, None), ("regs", 2, 8, None),
          ("shipped", 2, 8, None), ("regs", 2, 4, None), ("regs", 4, 8, None), ("shipped", 8, 8, 2048),
          ("shipped", 8, 8, 4096), ("regs", 8, 16, None), ("regs", 8, 8, 2048), ("regs", 8, 4, None),
          ("regs", 16, 8, 2048), ("regs", 4, 8, 2048), ("shipped", 16, 4, 2048), ("regs", 8, 16, 2048),
          ("shipped", 4, 4, 2048))
DEADLINE_S = 330.0


# --plan tf32x3: bundle/fused_kernels.py with every product's input_precision "ieee" replaced by
# "tf32x3" (tensor-core products of a three-term TF32 split: not the frozen procedure's float32 FMA
# arithmetic, so its flips against the frozen predictions are measured per draw, G = 1 and 8).
TF32X3_SHAPES = (("tf32x3", 1, None, None), ("tf32x3", 8, 8, None), ("shipped", 1, None, None),
                 ("shipped", 8, 8, None), ("tf32x3", 8, 4, None), ("tf32x3", 2, 8, None))
_TF32X3: list = []


def tf32x3_kernels():
    """bundle/fused_kernels.py with input_precision="tf32x3", imported from a temporary file (triton reads the source)."""
    if not _TF32X3:
        import importlib.util  # noqa: PLC0415
        import tempfile  # noqa: PLC0415

        text = (fused_device.REPO / "bundle" / "fused_kernels.py").read_text()
        if text.count('input_precision="ieee"') < 10:
            raise RuntimeError("bundle/fused_kernels.py no longer spells its products input_precision=\"ieee\"")
        path = Path(tempfile.mkdtemp()) / "fused_kernels_tf32x3.py"
        path.write_text(text.replace('input_precision="ieee"', 'input_precision="tf32x3"'))
        spec = importlib.util.spec_from_file_location("fused_kernels_tf32x3", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        _TF32X3.append(module)
    return _TF32X3[0]


def swap_kernel(task, kind: str | None = None) -> None:
    """Point *task*'s kernels at the probe's: "regs" swaps grid_train_kernel (same signature and
    protocol), "tf32x3" all three kernels."""
    kind = kind or os.environ.get("REV88_PROBE_KERNEL") or "regs"
    if kind == "tf32x3":
        task._kernels = tf32x3_kernels()
        return
    import fused_regs_kernels  # noqa: PLC0415

    task._kernels = types.SimpleNamespace(train_kernel=task._kernels.train_kernel,
                                          predict_kernel=task._kernels.predict_kernel,
                                          grid_train_kernel=fused_regs_kernels.grid_train_kernel)


def _set_chunk() -> None:
    from bundle import fused_learner  # noqa: PLC0415

    if os.environ.get("REV88_PROBE_RED"):
        fused_learner.GRID_REDUCE_BLOCK = int(os.environ["REV88_PROBE_RED"])


def _patched_make_task(original):
    def make(learner, inputs, ctas, warps, slices=None):
        _set_chunk()
        task = original(learner, inputs, ctas, warps, slices)
        if os.environ.get("REV88_PROBE_KERNEL") in ("regs", "tf32x3"):
            swap_kernel(task)
        return task
    return make


def draws_child(ctas: int, warps: int) -> dict:
    import numpy as np  # noqa: PLC0415

    from bundle import fused_learner  # noqa: PLC0415
    from bundle.data import load_draw  # noqa: PLC0415

    _set_chunk()
    rows = []
    for draw in fused_device.DRAWS:
        task = fused_learner.FusedTask(**load_draw(draw).learner_inputs(), device="cuda", ctas=ctas, num_warps=warps)
        swap_kernel(task)
        task.run()
        pred, meta = task.outputs()
        file_pred = np.load(fused_device.FROZEN / "predictions" / f"draw-{draw:02d}.npy")
        rows.append({"draw": draw, "predictions_equal_frozen_hash":
                     meta["predictions_sha256"] == fused_device._frozen_meta(draw)["predictions_sha256"],
                     "flips_vs_frozen_file": int((file_pred != pred).sum()),
                     "state_vector_sha256": meta["state_vector_sha256"]})
    return {"kernel": os.environ.get("REV88_PROBE_KERNEL") or "regs", "ctas": ctas, "warps": warps,
            "reduce_block": fused_learner.GRID_REDUCE_BLOCK, "draws": rows}


def cpu_check(ctas: int) -> int:
    os.environ["TRITON_INTERPRET"] = "1"
    from bundle.data import load_draw  # noqa: PLC0415
    from bundle.fused_learner import FusedTask  # noqa: PLC0415

    task = FusedTask(**load_draw(0).learner_inputs(), device="cpu", ctas=ctas)
    swap_kernel(task)
    started = time.perf_counter()
    task.run()
    _, meta = task.outputs()
    equal = meta["predictions_sha256"] == fused_device._frozen_meta(0)["predictions_sha256"]
    print(json.dumps({"ctas": ctas, "seconds": round(time.perf_counter() - started, 1),
                      "predictions_equal_frozen_hash": equal, "state_vector_sha256": meta["state_vector_sha256"]}))
    return 0 if equal else 1


def main(plan_name: str = "regs") -> int:
    started = time.perf_counter()
    out = Path(os.environ.get("OUT") or ".")
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"fused-{plan_name}-probe.json"
    result: dict = {"schema": f"fused-{plan_name}-probe/1", "warmup": fused_device.WARMUP,
                    "repeats": fused_device.REPEATS, "timings": [], "draws": None}
    import torch  # noqa: PLC0415  (the parent reads the board; it launches no kernel)

    result["environment"] = fused_device._environment(torch)
    print(json.dumps(result["environment"]), flush=True)
    plan = [("frozen", None, None, None)] + list(TF32X3_SHAPES if plan_name == "tf32x3" else SHAPES)
    for kernel, ctas, warps, red in plan:
        left = DEADLINE_S - (time.perf_counter() - started)
        if left < 20:
            break
        args = ["timing", "--learner", "frozen" if kernel == "frozen" else "fused"]
        if ctas is not None:
            args += ["--ctas", str(ctas)]
        if warps is not None:
            args += ["--warps", str(warps)]
        os.environ["REV88_PROBE_KERNEL"] = kernel
        os.environ["REV88_PROBE_RED"] = str(red or "")
        record = {"kernel": kernel, "ctas": ctas, "warps": warps, "reduce_block": red,
                  **_run_child(args, min(fused_device.CHILD_TIMEOUT_S, left))}
        record.pop("ms_per_task", None)
        result["timings"].append(record)
        print(f"{kernel:8s} ctas={ctas} warps={warps} red={red}: ms/task {record.get('ms_per_task_median', 'ERR')} "
              f"peak {record.get('peak_allocated_bytes')} B equal {record.get('predictions_equal_frozen_hash')} "
              f"{record.get('error') or ''} {str(record.get('stderr_tail') or '')[-600:]}", flush=True)
        fused_device._write_atomic(path, result)
    if plan_name == "tf32x3":
        result["draws"] = []
        for ctas, warps in ((1, None), (8, 8)):
            os.environ["REV88_PROBE_KERNEL"] = "tf32x3"
            os.environ["REV88_PROBE_RED"] = ""
            args = ["draws", "--ctas", str(ctas)] + (["--warps", str(warps)] if warps else [])
            record = _run_child(args, 150.0)
            result["draws"].append(record)
            rows = record.get("draws") or []
            print(f"draws tf32x3 ctas={ctas}: equal {sum(bool(r['predictions_equal_frozen_hash']) for r in rows)}/"
                  f"{len(rows)}, flips {[r['flips_vs_frozen_file'] for r in rows]} {record.get('error') or ''} "
                  f"{str(record.get('stderr_tail') or '')[-600:]}", flush=True)
            fused_device._write_atomic(path, result)
        result["wall_s"] = time.perf_counter() - started
        fused_device._write_atomic(path, result)
        return 0
    good = [r for r in result["timings"] if r["kernel"] == "regs" and r.get("predictions_equal_frozen_hash")
            and r.get("ms_per_task_median")]
    if good:
        best = min(good, key=lambda r: r["ms_per_task_median"])
        left = DEADLINE_S + 120 - (time.perf_counter() - started)
        os.environ["REV88_PROBE_KERNEL"] = "regs"
        os.environ["REV88_PROBE_RED"] = str(best["reduce_block"] or "")
        result["draws"] = _run_child(["draws", "--ctas", str(best["ctas"]), "--warps", str(best["warps"])],
                                     max(30.0, min(150.0, left)))
        rows = result["draws"].get("draws") or []
        print(f"draws regs ctas={best['ctas']} warps={best['warps']} red={best['reduce_block']}: equal "
              f"{sum(bool(r['predictions_equal_frozen_hash']) for r in rows)}/11, flips "
              f"{[r['flips_vs_frozen_file'] for r in rows]} {result['draws'].get('error') or ''}", flush=True)
    result["wall_s"] = time.perf_counter() - started
    fused_device._write_atomic(path, result)
    print(f"wrote {path}")
    return 0


def _run_child(args: list[str], timeout: float) -> dict:
    """fused_device's fresh child, but of this script (so the kernel swap applies)."""
    return fused_device._run_child(args, timeout, script=__file__)


def _child(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", choices=("timing", "draws"))
    parser.add_argument("--learner", default="fused")
    parser.add_argument("--ctas", type=int)
    parser.add_argument("--warps", type=int)
    args = parser.parse_args(argv)
    if os.environ.get("REV88_PROBE_KERNEL") == "tf32x3":
        tf32x3_kernels()
    try:
        if args.child == "draws":
            record = draws_child(args.ctas, args.warps)
        else:
            fused_device._make_task = _patched_make_task(fused_device._make_task)
            record = fused_device.timing_child(args.learner, args.ctas, args.warps)
    except Exception as exc:
        print(json.dumps(fused_device._finite(fused_device._error(exc))))
        return 1
    print(json.dumps(fused_device._finite(record)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--cpu-check":
        sys.exit(cpu_check(int(sys.argv[2])))
    if "--child" in sys.argv:
        sys.exit(_child(sys.argv[1:]))
    sys.exit(main(sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--plan" else "regs"))
