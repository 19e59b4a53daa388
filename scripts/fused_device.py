"""The fused learner (``rev88-fused``, bundle/fused_learner.py) against the frozen one on a CUDA host.

Run from the repository root on a GPU host (torch with its bundled triton)::

    PYTHONPATH=. python3 scripts/fused_device.py

For each of the 11 draws, in this process: a fresh :class:`bundle.fused_learner.FusedTask`
and a fresh :class:`bundle.learner.PreparedTask` (CUDA graphs, ``CUBLAS_WORKSPACE_CONFIG=:16:8``,
set here before torch is imported); the fused predictions are compared with the frozen
``predictions_sha256`` (evidence/rev88-original/results) and, element by element, with the
frozen learner's predictions of this process (flips). ms/task for both: median of
``REPEATS`` invocations after ``WARMUP``, each timed with ``time.perf_counter`` between two
``torch.cuda.synchronize()``. Peak allocated bytes: a fresh child process per learner
(``--memory fused|frozen``) resets the peak statistics before it prepares draw 0, runs one
invocation, synchronises and reads ``torch.cuda.max_memory_allocated()`` (the fixture's
memory scope, bundle/fixture.py). Then, time permitting, draw 0 with other warp counts of
the training program. A failing draw or step is recorded, never fatal.

Writes ``$OUT/fused-device.json`` (``./fused-device.json`` without ``OUT``) and prints a summary.
"""

from __future__ import annotations

import os

os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":16:8"  # before torch is imported: cuBLAS reads it once

import hashlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DRAWS = range(11)
WARMUP = 3
REPEATS = 20
SWEEP_WARPS = (4, 16)
SWEEP_DEADLINE_S = 150.0   # start no sweep entry after this many seconds of the run
CHILD_TIMEOUT_S = 120


def _frozen_meta(draw: int) -> dict:
    return json.loads((REPO / "evidence" / "rev88-original" / "results" / f"draw-{draw:02d}.json").read_text())[
        "metadata"]


def _ms_per_task(task, torch) -> list[float]:
    """WARMUP untimed runs, then REPEATS runs each between two synchronisations (ms)."""
    for _ in range(WARMUP):
        task.run()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        task.run()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - started) * 1e3)
    return times


def _error(exc: BaseException) -> dict:
    return {"error": f"{type(exc).__name__}: {exc}"[:2000], "traceback_tail": traceback.format_exc()[-3000:]}


def _finite(obj):
    """*obj* with every non-finite float replaced by its repr (strict JSON)."""
    if isinstance(obj, float) and not np.isfinite(obj):
        return repr(obj)
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def _storage_bytes(named) -> int:
    seen: dict[int, int] = {}
    for _, t in named:
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


def memory_child(which: str) -> dict:
    """Fresh-process peak: reset peak stats, prepare draw 0, one invocation, synchronise, read the peak."""
    import torch  # noqa: PLC0415

    from bundle.data import load_draw  # noqa: PLC0415

    inputs = load_draw(0).learner_inputs()
    torch.cuda.init()
    torch.cuda.reset_peak_memory_stats()
    if which == "fused":
        from bundle.fused_learner import FusedTask  # noqa: PLC0415

        task = FusedTask(**inputs, device="cuda")
    else:
        from bundle.learner import PreparedTask  # noqa: PLC0415

        task = PreparedTask(**inputs, device="cuda")
    task.run()
    torch.cuda.synchronize()
    record = {"learner": which, "peak_allocated_bytes": int(torch.cuda.max_memory_allocated()),
              "allocated_bytes_after": int(torch.cuda.memory_allocated()),
              "named_storage_bytes": _storage_bytes(task.named_tensors()),
              "predictions_sha256": task.state_hashes()["predictions_sha256"]}
    return record


def _memory(which: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("TRITON_INTERPRET", None)
    try:
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--memory", which], cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"learner": which, "error": f"child timed out after {CHILD_TIMEOUT_S} s"}
    if proc.returncode != 0:
        return {"learner": which, "error": f"child exited {proc.returncode}", "stderr_tail": proc.stderr[-3000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _environment(torch) -> dict:
    from bundle import fused_learner  # noqa: PLC0415

    props = torch.cuda.get_device_properties(0)
    return {
        "python": platform.python_version(), "torch": torch.__version__, "torch_cuda": torch.version.cuda,
        "triton": fused_learner.triton_version(), "device_name": props.name,
        "device_count": torch.cuda.device_count(), "capability": list(torch.cuda.get_device_capability(0)),
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "triton_interpret": os.environ.get("TRITON_INTERPRET"),
        "kernel_source_sha256": fused_learner.kernel_source_sha256(),
        "fused_learner_sha256": hashlib.sha256((REPO / "bundle" / "fused_learner.py").read_bytes()).hexdigest(),
        "learner_sha256": hashlib.sha256((REPO / "bundle" / "learner.py").read_bytes()).hexdigest(),
    }


def _one_draw(draw: int, torch) -> dict:
    from bundle import fused_learner  # noqa: PLC0415
    from bundle.data import load_draw  # noqa: PLC0415
    from bundle.learner import PreparedTask  # noqa: PLC0415

    out: dict = {"draw": draw}
    inputs = load_draw(draw).learner_inputs()
    frozen_hash = _frozen_meta(draw)["predictions_sha256"]
    fused_pred = frozen_pred = None
    try:
        started = time.perf_counter()
        task = fused_learner.FusedTask(**inputs, device="cuda")
        task.run()
        torch.cuda.synchronize()
        out["fused_first_run_s"] = time.perf_counter() - started  # includes compilation on the first draw
        fused_pred, meta = task.outputs()
        first_hashes = task.state_hashes()
        times = _ms_per_task(task, torch)
        again = task.state_hashes()
        out["fused"] = {
            "predictions_sha256": meta["predictions_sha256"],
            "predictions_equal_frozen_hash": meta["predictions_sha256"] == frozen_hash,
            "initial_parameter_equal_frozen": meta["initial_parameter_sha256"]
            == _frozen_meta(draw)["initial_parameter_sha256"],
            "repeatable_after_timing": first_hashes == again,
            "state_vector_sha256": meta["state_vector_sha256"], "scores_sha256": meta["scores_sha256"],
            "ms_per_task_median": statistics.median(times), "ms_per_task": times,
        }
        file_pred = np.load(REPO / "evidence" / "rev88-original" / "predictions" / f"draw-{draw:02d}.npy")
        out["fused"]["flips_vs_frozen_file"] = int((file_pred != fused_pred).sum())
        fused_scores = task.scores.clone()
        fused_params = task.params.clone()
        del task
    except Exception as exc:
        out["fused"] = _error(exc)
    try:
        ref = PreparedTask(**inputs, device="cuda")
        ref.run()
        frozen_pred, ref_meta = ref.outputs()
        times = _ms_per_task(ref, torch)
        out["frozen"] = {"predictions_sha256": ref_meta["predictions_sha256"],
                         "predictions_equal_frozen_hash": ref_meta["predictions_sha256"] == frozen_hash,
                         "ms_per_task_median": statistics.median(times), "ms_per_task": times}
        if fused_pred is not None:
            out["flips_fused_vs_frozen_same_process"] = int((frozen_pred != fused_pred).sum())
            ref_params = torch.cat([p.detach().reshape(-1) for p in ref.params])
            out["scores_max_abs_diff"] = float((ref.scores - fused_scores).abs().max())
            out["final_parameter_max_abs_diff"] = float((ref_params - fused_params).abs().max())
        del ref
    except Exception as exc:
        out["frozen"] = _error(exc)
    return out


def _sweep(torch, started: float) -> list[dict]:
    from bundle import fused_learner  # noqa: PLC0415
    from bundle.data import load_draw  # noqa: PLC0415

    inputs = load_draw(0).learner_inputs()
    rows = []
    for warps in SWEEP_WARPS:
        if time.perf_counter() - started > SWEEP_DEADLINE_S:
            rows.append({"num_warps": warps, "skipped": f"past {SWEEP_DEADLINE_S:g} s"})
            continue
        try:
            t0 = time.perf_counter()
            task = fused_learner.FusedTask(**inputs, device="cuda", num_warps=warps)
            task.run()
            torch.cuda.synchronize()
            first = time.perf_counter() - t0
            times = _ms_per_task(task, torch)
            _, meta = task.outputs()
            rows.append({"num_warps": warps, "first_run_s": first, "ms_per_task_median": statistics.median(times),
                         "predictions_equal_frozen_hash": meta["predictions_sha256"]
                         == _frozen_meta(0)["predictions_sha256"],
                         "state_vector_sha256": meta["state_vector_sha256"]})
        except Exception as exc:
            rows.append({"num_warps": warps, **_error(exc)})
    return rows


def main() -> int:
    started = time.perf_counter()
    import torch  # noqa: PLC0415

    if not torch.cuda.is_available():
        print("fused_device: torch sees no CUDA GPU; run this on the GPU host", file=sys.stderr)
        return 2
    result: dict = {"schema": "fused-device/1", "warmup": WARMUP, "repeats": REPEATS,
                    "timing": "perf_counter between torch.cuda.synchronize() calls, one invocation each"}
    try:
        result["environment"] = _environment(torch)
    except Exception as exc:
        result["environment"] = _error(exc)
    result["draws"] = []
    for draw in DRAWS:
        try:
            row = _one_draw(draw, torch)
        except Exception as exc:
            row = {"draw": draw, **_error(exc)}
        result["draws"].append(row)
        fused, frozen = row.get("fused", {}), row.get("frozen", {})
        print(f"draw {draw:2d}: fused hash equal {fused.get('predictions_equal_frozen_hash')}, flips vs frozen "
              f"{row.get('flips_fused_vs_frozen_same_process')}, ms fused {fused.get('ms_per_task_median', 'ERR')} "
              f"frozen {frozen.get('ms_per_task_median', 'ERR')}", flush=True)
    result["memory"] = [_memory("fused"), _memory("frozen")]
    result["warp_sweep_draw0"] = _sweep(torch, started)
    rows = result["draws"]
    fused_ms = [r["fused"]["ms_per_task_median"] for r in rows if "ms_per_task_median" in r.get("fused", {})]
    frozen_ms = [r["frozen"]["ms_per_task_median"] for r in rows if "ms_per_task_median" in r.get("frozen", {})]
    result["summary"] = {
        "draws_fused_equal_frozen_hash": sum(bool(r.get("fused", {}).get("predictions_equal_frozen_hash"))
                                             for r in rows),
        "draws_frozen_equal_frozen_hash": sum(bool(r.get("frozen", {}).get("predictions_equal_frozen_hash"))
                                              for r in rows),
        "flips_per_draw": [r.get("flips_fused_vs_frozen_same_process") for r in rows],
        "fused_ms_per_task_median_over_draws": statistics.median(fused_ms) if fused_ms else None,
        "frozen_ms_per_task_median_over_draws": statistics.median(frozen_ms) if frozen_ms else None,
        "peak_allocated_bytes": {m["learner"]: m.get("peak_allocated_bytes") for m in result["memory"]},
        "wall_s": time.perf_counter() - started,
    }
    out_dir = Path(os.environ.get("OUT") or ".")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "fused-device.json"
    path.write_text(json.dumps(_finite(result), indent=2, allow_nan=False) + "\n")
    print(json.dumps(result["summary"], indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--memory":
        print(json.dumps(memory_child(sys.argv[2])))
        sys.exit(0)
    sys.exit(main())
