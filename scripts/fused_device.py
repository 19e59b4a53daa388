"""The fused learner (``rev88-fused``, bundle/fused_learner.py) against the frozen one on a CUDA host.

Run from the repository root on a GPU host (torch with its bundled triton)::

    OUT=$OUT PYTHONPATH=. python3 scripts/fused_device.py

Side by side on GPU 0, each in a FRESH CHILD PROCESS with a timeout (a compile error, a crash or
a hung grid barrier costs that child only; the parent never launches a kernel):

* ``timing`` children, one per learner: the frozen learner (:class:`bundle.learner.PreparedTask`,
  CUDA graphs, ``CUBLAS_WORKSPACE_CONFIG=:16:8`` set before torch is imported), then the fused one
  at each launch shape of ``SWEEP`` (training programs, warps, product slices). Each resets the peak statistics, prepares
  draw 0, runs one invocation (compiling), synchronises and reads
  ``torch.cuda.max_memory_allocated()`` (the fixture's memory scope, bundle/fixture.py); then
  checks the outputs (for ctas >= 2 this includes the barrier counter), then ms/task: the
  median of ``REPEATS`` invocations after ``WARMUP``, each timed with ``time.perf_counter``
  between two ``torch.cuda.synchronize()``; and whether the state bits after timing equal
  those after the first invocation.
* one ``draws`` child: all 11 draws with the multi-CTA G (:data:`bundle.fused_learner.GRID_TRAIN_CTAS`):
  predictions_sha256 against the frozen one and flips against the frozen prediction files
  (evidence/rev88-original/predictions).

A child starts only while ``DEADLINE_S`` allows (its timeout is cut to what is left), in
priority order: frozen, the first two shapes of the sweep, the draws check, the rest. The JSON is
rewritten (atomically) after every child, so a stopped run keeps what finished.
Writes ``$OUT/fused-device.json`` (``./fused-device.json`` without ``OUT``) and prints a summary.

``--child timing --learner frozen|fused [--ctas N] [--warps N] [--slices F R]`` and ``--child draws --ctas N``
run one child in this process and print its JSON record on the last stdout line.
"""

from __future__ import annotations

import os

os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":16:8"  # before torch is imported: cuBLAS reads it once

import argparse  # noqa: E402
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
FROZEN = REPO / "evidence" / "rev88-original"
DRAWS = range(11)
WARMUP = 3
REPEATS = 20
# Launch shapes timed after the frozen learner, in priority order: (ctas, warps, feature slice, row slice);
# None = the learner's default. Slices of 16 over features sum 48 columns instead of 64 (the kernels' KP).
SWEEP = ((1, None, None, None), (1, 8, 16, 32), (1, 16, 16, 16), (1, 16, 16, 32), (1, 16, 32, 32), (1, 4, 16, 16),
         (8, None, None, None), (8, 4, 16, 16), (8, 8, 16, 16), (4, 4, 16, 16), (16, 4, 16, 16), (2, 4, 16, 32))
DEADLINE_S = 330.0        # no child starts after this many seconds; a child's timeout ends by then
CHILD_TIMEOUT_S = 75.0
MIN_CHILD_S = 15.0        # skip a child when less than this is left


def _frozen_meta(draw: int) -> dict:
    return json.loads((FROZEN / "results" / f"draw-{draw:02d}.json").read_text())["metadata"]


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


def _write_atomic(path: Path, result: dict) -> None:
    """Strict JSON of *result* at *path*, through a temporary file and a rename."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(_finite(result), indent=2, allow_nan=False) + "\n")
    os.replace(tmp, path)


def _storage_bytes(named) -> int:
    seen: dict[int, int] = {}
    for _, t in named:
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


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


def _make_task(learner: str, inputs: dict, ctas: int | None, warps: int | None, slices: tuple | None = None):
    if learner == "frozen":
        from bundle.learner import PreparedTask  # noqa: PLC0415

        return PreparedTask(**inputs, device="cuda")
    from bundle.fused_learner import DEFAULT_TRAIN_CTAS, FusedTask  # noqa: PLC0415

    feature, row = slices or (None, None)
    return FusedTask(**inputs, device="cuda", ctas=DEFAULT_TRAIN_CTAS if ctas is None else ctas, num_warps=warps,
                     feature_slice=feature, row_slice=row)


def timing_child(learner: str, ctas: int | None, warps: int | None, slices: tuple | None = None) -> dict:
    """Fresh-process peak memory, first-run time, outputs check and ms/task of one learner on draw 0."""
    import torch  # noqa: PLC0415

    from bundle.data import load_draw  # noqa: PLC0415

    inputs = load_draw(0).learner_inputs()
    torch.cuda.init()
    torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    task = _make_task(learner, inputs, ctas, warps, slices)
    task.run()
    torch.cuda.synchronize()
    record: dict = {"first_run_s": time.perf_counter() - started,  # prepare + compile + one invocation
                    "peak_allocated_bytes": int(torch.cuda.max_memory_allocated()),
                    "allocated_bytes_after": int(torch.cuda.memory_allocated()),
                    "named_storage_bytes": _storage_bytes(task.named_tensors())}
    _, meta = task.outputs()  # raises on a failed grid barrier before any timing
    first = task.state_hashes()
    record |= {"predictions_sha256": meta["predictions_sha256"],
               "predictions_equal_frozen_hash": meta["predictions_sha256"] == _frozen_meta(0)["predictions_sha256"],
               "state_vector_sha256": first["state_vector_sha256"]}
    if learner == "fused":
        record["learner_block"] = meta["learner"]
    times = _ms_per_task(task, torch)
    task.outputs()
    record |= {"ms_per_task_median": statistics.median(times), "ms_per_task": times,
               "repeatable_after_timing": task.state_hashes() == first}
    return record


def draws_child(ctas: int) -> dict:
    """All draws with FusedTask(ctas=ctas): predictions against the frozen hashes and prediction files."""
    from bundle import fused_learner  # noqa: PLC0415
    from bundle.data import load_draw  # noqa: PLC0415

    rows = []
    for draw in DRAWS:
        row: dict = {"draw": draw}
        try:
            task = fused_learner.FusedTask(**load_draw(draw).learner_inputs(), device="cuda", ctas=ctas)
            task.run()
            pred, meta = task.outputs()
            file_pred = np.load(FROZEN / "predictions" / f"draw-{draw:02d}.npy")
            row |= {"predictions_equal_frozen_hash": meta["predictions_sha256"] == _frozen_meta(draw)["predictions_sha256"],
                    "flips_vs_frozen_file": int((file_pred != pred).sum()),
                    "initial_parameter_equal_frozen": meta["initial_parameter_sha256"]
                    == _frozen_meta(draw)["initial_parameter_sha256"]}
            del task
        except Exception as exc:
            row |= _error(exc)
        rows.append(row)
    return {"ctas": ctas, "draws": rows}


def _run_child(args: list[str], timeout: float, script: str | Path | None = None) -> dict:
    """Run *script* (default this one) as ``--child ...`` in a fresh process; its last stdout line is the
    JSON record. The probes that reuse these children pass their own file."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("TRITON_INTERPRET", None)
    started = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, str(Path(script or __file__).resolve()), "--child", *args], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        tail = (exc.stderr or b"")[-2000:]
        return {"error": f"child timed out after {timeout:.1f} s (a hung kernel?)",
                "stderr_tail": tail.decode(errors="replace") if isinstance(tail, bytes) else tail}
    wall = time.perf_counter() - started
    lines = proc.stdout.strip().splitlines()
    try:
        record = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        record = {}
    if proc.returncode != 0 or not isinstance(record, dict) or not record:
        record = {**(record if isinstance(record, dict) else {}), "error": record.get("error")
                  if isinstance(record, dict) and record.get("error") else f"child exited {proc.returncode}",
                  "stderr_tail": proc.stderr[-3000:]}
    record["child_wall_s"] = wall
    return record


def _plan(default_ctas: int) -> list[tuple[str, dict, list[str]]]:
    """(kind, identity, child args) in priority order: the frozen learner, the first two shapes of
    :data:`SWEEP`, the draws check, then the rest of the sweep."""
    plan = [("timing", {"learner": "frozen"}, ["timing", "--learner", "frozen"])]
    for ctas, warps, feature, row in SWEEP:
        ident: dict = {"learner": "fused", "ctas": ctas}
        args = ["timing", "--learner", "fused", "--ctas", str(ctas)]
        if warps is not None:
            ident["warps"] = warps
            args += ["--warps", str(warps)]
        if feature is not None:
            ident["slices"] = [feature, row]
            args += ["--slices", str(feature), str(row)]
        plan.append(("timing", ident, args))
    plan.insert(3, ("draws", {"ctas": default_ctas}, ["draws", "--ctas", str(default_ctas)]))
    return plan


def _environment(torch) -> dict:
    from bundle import fused_learner  # noqa: PLC0415

    props = torch.cuda.get_device_properties(0)
    return {
        "gpu_uuid": str(getattr(props, "uuid", "")) or None,
        "python": platform.python_version(), "torch": torch.__version__, "torch_cuda": torch.version.cuda,
        "triton": fused_learner.triton_version(), "device_name": props.name, "sm_count": props.multi_processor_count,
        "device_count": torch.cuda.device_count(), "capability": list(torch.cuda.get_device_capability(0)),
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "triton_interpret": os.environ.get("TRITON_INTERPRET"),
        "kernel_source_sha256": fused_learner.kernel_source_sha256(),
        "fused_learner_sha256": hashlib.sha256((REPO / "bundle" / "fused_learner.py").read_bytes()).hexdigest(),
        "learner_sha256": hashlib.sha256((REPO / "bundle" / "learner.py").read_bytes()).hexdigest(),
        "default_train_ctas": fused_learner.DEFAULT_TRAIN_CTAS,
        "grid_train_ctas": fused_learner.GRID_TRAIN_CTAS,
        "default_grid_warps": fused_learner.DEFAULT_GRID_WARPS,
    }


def _label(ident: dict) -> str:
    if ident.get("learner") == "frozen":
        return "frozen"
    return ("fused ctas=" + str(ident.get("ctas")) + (f" warps={ident['warps']}" if "warps" in ident else "")
            + (" slices={}/{}".format(*ident["slices"]) if "slices" in ident else ""))


def main() -> int:
    started = time.perf_counter()
    import torch  # noqa: PLC0415

    if not torch.cuda.is_available():
        print("fused_device: torch sees no CUDA GPU; run this on the GPU host", file=sys.stderr)
        return 2
    from bundle.fused_learner import GRID_TRAIN_CTAS  # noqa: PLC0415

    result: dict = {"schema": "fused-device/2", "warmup": WARMUP, "repeats": REPEATS, "deadline_s": DEADLINE_S,
                    "timing": "perf_counter between torch.cuda.synchronize() calls, one invocation each, draw 0, "
                              "each learner in its own fresh child process"}
    try:
        result["environment"] = _environment(torch)
    except Exception as exc:
        result["environment"] = _error(exc)
    result["timings"], result["draws"] = [], None
    out_dir = Path(os.environ.get("OUT") or ".")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "fused-device.json"
    for kind, ident, args in _plan(GRID_TRAIN_CTAS):
        left = DEADLINE_S - (time.perf_counter() - started)
        if left < MIN_CHILD_S:
            record = {"skipped": f"{left:.0f} s left of the {DEADLINE_S:g} s deadline"}
        else:
            record = _run_child(args, min(CHILD_TIMEOUT_S, left))
        record = {**ident, **record}
        if kind == "draws":
            result["draws"] = record
            rows = record.get("draws") or []
            print(f"draws ctas={ident['ctas']}: equal frozen hash "
                  f"{sum(bool(r.get('predictions_equal_frozen_hash')) for r in rows)}/{len(DRAWS)}, flips "
                  f"{[r.get('flips_vs_frozen_file') for r in rows]} {record.get('error') or record.get('skipped') or ''}",
                  flush=True)
        else:
            result["timings"].append(record)
            print(f"{_label(ident):24s} ms/task {record.get('ms_per_task_median', 'ERR')} peak "
                  f"{record.get('peak_allocated_bytes')} B, draw 0 equal frozen "
                  f"{record.get('predictions_equal_frozen_hash')} "
                  f"{record.get('error') or record.get('skipped') or ''}", flush=True)
        _write_atomic(path, result)
    draws = (result["draws"] or {}).get("draws") or []
    result["summary"] = {
        "ms_per_task_median": {_label(r): r.get("ms_per_task_median") for r in result["timings"]},
        "peak_allocated_bytes": {_label(r): r.get("peak_allocated_bytes") for r in result["timings"]},
        "draw0_equal_frozen_hash": {_label(r): r.get("predictions_equal_frozen_hash") for r in result["timings"]},
        "errors": {_label(r): r["error"] for r in result["timings"] if r.get("error")},
        "grid_ctas": GRID_TRAIN_CTAS,
        "draws_default_ctas_equal_frozen_hash": sum(bool(r.get("predictions_equal_frozen_hash")) for r in draws),
        "flips_per_draw_default_ctas": [r.get("flips_vs_frozen_file") for r in draws],
        "wall_s": time.perf_counter() - started,
    }
    _write_atomic(path, result)
    print(json.dumps(_finite(result["summary"]), indent=2))
    print(f"wrote {path}")
    return 0


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", choices=("timing", "draws"), help="run one child here (internal)")
    parser.add_argument("--learner", choices=("frozen", "fused"), default="fused")
    parser.add_argument("--ctas", type=int, help="training programs of the fused learner (default: its default)")
    parser.add_argument("--warps", type=int, help="warps per training program (default: the learner's)")
    parser.add_argument("--slices", type=int, nargs=2, metavar=("FEATURE", "ROW"),
                        help="summed-axis slices of the products (default: the learner's)")
    args = parser.parse_args(argv)
    if args.child == "draws" and args.ctas is None:
        parser.error("--child draws needs --ctas")
    if args.child is None and (args.ctas is not None or args.warps is not None or args.slices is not None):
        parser.error("--ctas/--warps/--slices only with --child")
    return args


def _child(args: argparse.Namespace) -> int:
    """One child; its JSON record (or the error) on the last stdout line; exit 1 on an error."""
    try:
        if args.child == "draws":
            record = draws_child(args.ctas)
        else:
            record = timing_child(args.learner, args.ctas, args.warps, tuple(args.slices) if args.slices else None)
    except Exception as exc:
        print(json.dumps(_finite(_error(exc))))
        return 1
    print(json.dumps(_finite(record)))
    return 0


if __name__ == "__main__":
    parsed = _parse(sys.argv[1:])
    sys.exit(_child(parsed) if parsed.child else main())
