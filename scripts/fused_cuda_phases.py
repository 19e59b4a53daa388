"""Issue 16 measurement: where a training step of the CUDA kernel tool's ``rev88_train`` spends its
SM cycles, per phase, at several launch shapes on one GPU.

    OUT=$OUT PYTHONPATH=. python3 scripts/fused_cuda_phases.py [G:warps[:cluster[:NAME=V,...]] ...]

(cluster 0 or 1, empty for the host's default; SPLIT=0 or SPLIT=1 among the NAME=V sets the task's
``split`` instead of a -D option, EXCHANGE=pull or EXCHANGE=push its ``exchange``; SRC=path builds that shape from another kernel source, e.g. an earlier
revision written out with ``git show REV:bundle/fused_cuda.cu``, so that two revisions are compared on
one board in one call; the shape's record then names that file's sha256.)

Builds bundle/fused_cuda.cu with ``-DREV88_PHASE_CLOCK`` (clock64 marks at every phase boundary of a
step, kept by thread 0, a weight-gradient warp, and by the first thread of warp 4, a leaf/lift warp;
the marks add a few instructions per phase, so absolute times are slightly above the protocol's
build; NAME=V are more -D options of that shape's build). Per shape: draw 0, two untimed invocations, then REPEATS invocations with the counters zeroed
first, training and prediction timed apart with CUDA events. Writes ``$OUT/fused-cuda-phases.json``
and prints mean cycles per step and mark. A malformed shape, or an SRC file that is missing or lays out shared
memory otherwise than the host allocates (a source the verifier does not list, or an older layout), is one
line and exit 2 before any GPU work; exit 1 when a shape failed on the GPU (its error is in the JSON). A
measurement for the issue's notes; nothing reads it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

REPEATS = 3
MARKS = ("fwd W0", "fwd W1", "fwd W2", "fwd W3", "logits+loss", "head+upstream", "W3 work", "W3 sync",
         "bwd W2", "bwd W1", "W0 work", "W0 sync", "barrier", "update")


def parse_shape(shape: str) -> tuple[int, int, bool | None, bool | None, str | None, Path | None, tuple[str, ...]]:
    """``G:warps[:cluster[:NAME=V,...]]`` as (ctas, warps, cluster, split, exchange, source, -D options).

    Raises:
        ValueError: with the one line to print: not that form, or SRC names no file, or a source whose
            training block lays out its shared memory otherwise than the host allocates it (the verifier's
            ``cuda_train_shared_bytes`` for that source's sha256 against ``bundle.fused_cuda``'s).
    """
    from bundle import fused_cuda  # noqa: PLC0415
    from verify.checks.run_energy import cuda_train_shared_bytes  # noqa: PLC0415

    fields = shape.split(":")
    try:
        if len(fields) < 2 or len(fields) > 4:
            raise ValueError
        ctas, warps = int(fields[0]), int(fields[1])
        cluster = bool(int(fields[2])) if len(fields) > 2 and fields[2] != "" else None
        names = [d for d in fields[3].split(",") if d] if len(fields) > 3 else []
        split = next((bool(int(d.split("=", 1)[1])) for d in names if d.startswith("SPLIT=")), None)
        exchange = next((d.split("=", 1)[1] for d in names if d.startswith("EXCHANGE=")), None)
        if exchange not in (None, *fused_cuda.EXCHANGES):
            raise ValueError
    except ValueError:
        raise ValueError(f"shape {shape!r} is not G:warps[:cluster[:NAME=V,...]] (e.g. 8:12 or 4:12::SRC=old.cu)") from None
    if any("=" not in d for d in names):
        raise ValueError(f"shape {shape!r}: every -D item is NAME=V")
    source = next((Path(d.split("=", 1)[1]) for d in names if d.startswith("SRC=")), None)
    defines = tuple(f"-D{d}" for d in names if not d.startswith(("SPLIT=", "SRC=", "EXCHANGE=")))
    if source is not None:
        if not source.is_file():
            raise ValueError(f"shape {shape!r}: SRC={source} is no file")
        sha = hashlib.sha256(source.read_bytes()).hexdigest()
        rows = -(-128 // ctas)
        for use_cluster in (False, True):
            theirs = cuda_train_shared_bytes(sha, rows, use_cluster)
            ours = fused_cuda.train_shared_bytes(rows, use_cluster)
            if theirs is None:
                raise ValueError(f"shape {shape!r}: SRC={source} ({sha[:8]}…) is no source the verifier lists, so "
                                 "its shared-memory layout is unknown; compare it at its own revision")
            if theirs != ours:
                raise ValueError(f"shape {shape!r}: SRC={source} ({sha[:8]}…) lays out {theirs} shared bytes per "
                                 f"block where the host allocates {ours}; compare it at its own revision")
        if exchange == "push" and cuda_train_shared_bytes(sha, rows, True, True) is None:
            raise ValueError(f"shape {shape!r}: SRC={source} ({sha[:8]}…) has no pushed exchange; drop EXCHANGE=push")
    return ctas, warps, cluster, split, exchange, source, defines


def measure(shape: str) -> dict:
    import cupy  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415
    import torch  # noqa: PLC0415

    from bundle import fused_cuda  # noqa: PLC0415
    from bundle.data import load_draw  # noqa: PLC0415
    from bundle.fused_cuda import CudaFusedTask, kernel_source_sha256  # noqa: PLC0415

    ctas, warps, cluster, split, exchange, source, defines = parse_shape(shape)
    if source is not None:
        fused_cuda.KERNEL_SOURCE = source   # read by the build and by kernel_source_sha256(); restored by main()

    class PhaseTask(CudaFusedTask):
        extra_defines = ("-DREV88_PHASE_CLOCK=1", *defines)

    task = PhaseTask(**load_draw(0).learner_inputs(), device="cuda", ctas=ctas, warps=warps, cluster=cluster,
                     split=split, exchange=exchange)
    for _ in range(2):
        task.run()
    torch.cuda.synchronize()
    counters = task._module.get_global("rev88_phase_cycles")
    view = cupy.ndarray((64, 2, len(MARKS)), dtype=cupy.uint64, memptr=counters)
    view[...] = 0
    train_ms, predict_ms = [], []
    for _ in range(REPEATS):
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        marks[0].record()
        task.train()
        marks[1].record()
        task.predict()
        marks[2].record()
        torch.cuda.synchronize()
        train_ms.append(marks[0].elapsed_time(marks[1]))
        predict_ms.append(marks[1].elapsed_time(marks[2]))
        task.run_count += 1
    task.barrier_check()
    cycles = view.get()[:ctas].astype(np.float64) / (REPEATS * task.steps)
    pred, meta = task.outputs()
    per_step_block0 = float(cycles[0, 0].sum())
    return {"shape": shape, "ctas": ctas, "warps": warps, "cluster": task.cluster, "split": task.split,
            "exchange": task.exchange,
            "kernel_source_sha256": kernel_source_sha256(), "steps": task.steps,
            "train_ms": train_ms, "predict_ms": predict_ms,
            "cycles_per_step_thread0": cycles[:, 0].tolist(), "cycles_per_step_warp4": cycles[:, 1].tolist(),
            "sm_mhz_estimate": per_step_block0 * task.steps / (min(train_ms) * 1e3),
            "state_vector_sha256": meta["state_vector_sha256"], "predictions_sha256": meta["predictions_sha256"]}


def main(argv: list[str]) -> int:
    import torch  # noqa: PLC0415

    from bundle import fused_cuda  # noqa: PLC0415

    shapes = argv or ["2:12", "2:16", "4:12", "4:16", "1:12", "8:12"]
    try:
        for shape in shapes:   # every shape checked before any GPU work
            parse_shape(shape)
    except ValueError as exc:
        print(f"fused_cuda_phases: {exc}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("fused_cuda_phases: torch sees no CUDA GPU; run this on the GPU host", file=sys.stderr)
        return 2
    shipped_source = fused_cuda.KERNEL_SOURCE
    out = Path(os.environ.get("OUT") or ".") / "fused-cuda-phases.json"
    results = {"schema": "fused-cuda-phases/1", "marks": MARKS, "device": torch.cuda.get_device_name(),
               "torch": torch.__version__, "repeats": REPEATS, "shapes": []}
    for shape in shapes:
        started = time.perf_counter()
        try:
            row = measure(shape)
        except Exception as exc:  # one shape's failure is recorded, the others still run
            row = {"shape": shape, "error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:400]}"}
        finally:
            fused_cuda.KERNEL_SOURCE = shipped_source
        row["wall_s"] = time.perf_counter() - started
        results["shapes"].append(row)
        out.write_text(json.dumps(results, indent=1))
        if "error" in row:
            print(f"{shape}: {row['error']}", flush=True)
            continue
        t0 = row["cycles_per_step_thread0"][0]
        w4 = row["cycles_per_step_warp4"][0]
        print(f"{shape} src={row['kernel_source_sha256'][:8]} cluster={row['cluster']} split={row['split']}: train {min(row['train_ms']):.3f} ms, predict "
              f"{min(row['predict_ms']):.3f} ms, ~{row['sm_mhz_estimate']:.0f} MHz, {sum(t0):.0f} cycles/step "
              f"(block 0), state {row['state_vector_sha256'][:8]}", flush=True)
        print("   " + "  ".join(f"{m}={a:.0f}/{b:.0f}" for m, a, b in zip(MARKS, t0, w4, strict=True)), flush=True)
    print(f"wrote {out}")
    failed = [row["shape"] for row in results["shapes"] if "error" in row]
    if failed:
        print(f"fused_cuda_phases: {len(failed)} of {len(shapes)} shapes failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
