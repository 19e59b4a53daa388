"""Issue 16 measurement: where the CUDA kernel tool's idle-adjusted energy per task goes, on one board.

    OUT=$OUT PYTHONPATH=. python3 scripts/fused_energy_parts.py [--shapes 2,8] [--rows 64,128] [--rounds 2]

Arms, each a loop of back-to-back launches in this one process (draw 0, the task's own defaults for G):
``task G=g QB=q`` (``rev88_train`` then ``rev88_predict``, as an invocation), ``train G=g`` (training
alone) and ``predict QB=q`` (prediction alone, of parameters trained at the first G, ``q`` query rows per
predict block: ``-DQB`` and the launch's block count, everything else as shipped). Per arm and round:
an idle window, the active window (enough launches for about ``--active`` seconds, stamps aligned to
NVML counter updates through :class:`bundle.energy.EnergyWindows`), an idle window, and the per-launch
figures of :func:`bundle.energy.trial_figures`; rounds rotate the arm order. Every predict arm's
scores and predictions are hashed, so rows-per-block variants can be compared bit for bit.

Writes ``$OUT/fused-energy-parts.json`` after every trial (a stopped run keeps what it measured).
Not a protocol phase; nothing reads it. A bad argument is one line and exit 2; no GPU, exit 2.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SETTLE_S, IDLE_S = 1.5, 2.0


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of ints") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give positive ints")
    return values


def _task_class(rows_per_block: int):
    """CudaFusedTask whose predict kernel is built and launched with ``rows_per_block`` query rows per block."""
    from bundle import fused_cuda  # noqa: PLC0415

    class RowsTask(fused_cuda.CudaFusedTask):
        def _with_rows(self, fn, *args):
            shipped = fused_cuda.PREDICT_ROWS
            fused_cuda.PREDICT_ROWS = rows_per_block
            try:
                return fn(*args)
            finally:
                fused_cuda.PREDICT_ROWS = shipped

        def _compile(self, cupy) -> None:
            self._with_rows(super()._compile, cupy)

        def predict(self) -> None:
            self._with_rows(super().predict)

    return RowsTask


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="fused_energy_parts", description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", type=_ints, default=[2, 8], help="training blocks G (default 2,8)")
    parser.add_argument("--rows", type=_ints, default=[64, 128], help="query rows per predict block (default 64,128)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--active", type=float, default=4.0, help="seconds of launches per active window")
    args = parser.parse_args(argv)
    import numpy as np  # noqa: PLC0415
    import torch  # noqa: PLC0415

    from bundle import energy as en  # noqa: PLC0415
    from bundle import fused_cuda  # noqa: PLC0415
    from bundle.data import load_draw  # noqa: PLC0415
    from bundle.errors import BundleError  # noqa: PLC0415

    if not torch.cuda.is_available():
        print("fused_energy_parts: torch sees no CUDA GPU; run this on the GPU host", file=sys.stderr)
        return 2
    props = torch.cuda.get_device_properties(0)
    limit = int(getattr(props, "shared_memory_per_block_optin", 0) or fused_cuda.SHARED_LIMIT)
    for q in args.rows:
        need = fused_cuda.predict_shared_bytes(q)
        if need > limit:
            print(f"fused_energy_parts: --rows {q} needs {need} B of shared memory per predict block, over this GPU's "
                  f"{limit}; give fewer rows", file=sys.stderr)
            return 2
    import pynvml  # noqa: PLC0415

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())

    class Counter:
        def read_energy_mj(self) -> int:
            return int(pynvml.nvmlDeviceGetTotalEnergyConsumption(handle))

    windows = en.EnergyWindows(Counter(), synchronize=torch.cuda.synchronize, align_stamps=True)
    inputs = load_draw(0).learner_inputs()
    tasks: dict[tuple[int, int], object] = {}

    def task(g: int, q: int):
        if (g, q) not in tasks:
            tasks[(g, q)] = _task_class(q)(**inputs, device="cuda", ctas=g)
            tasks[(g, q)].run()
            torch.cuda.synchronize()
        return tasks[(g, q)]

    arms = []
    for g in args.shapes:
        arms.append({"arm": f"task G={g} QB={args.rows[0]}", "kind": "task", "g": g, "q": args.rows[0]})
        arms.append({"arm": f"train G={g}", "kind": "train", "g": g, "q": args.rows[0]})
    for q in args.rows:
        arms.append({"arm": f"predict QB={q}", "kind": "predict", "g": args.shapes[0], "q": q})
    for g in args.shapes:
        for q in args.rows[1:]:
            arms.append({"arm": f"task G={g} QB={q}", "kind": "task", "g": g, "q": q})

    def launcher(arm):
        t = task(arm["g"], arm["q"])
        call = {"task": t.run, "train": t.train, "predict": t.predict}[arm["kind"]]

        def run(n: int) -> float:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(n):
                call()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end)
        return run

    out = Path(os.environ.get("OUT") or ".") / "fused-energy-parts.json"
    board = pynvml.nvmlDeviceGetUUID(handle)
    result = {"schema": "fused-energy-parts/1", "board": board if isinstance(board, str) else board.decode(),
              "device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "kernel_source_sha256": fused_cuda.kernel_source_sha256(), "arms": [a["arm"] for a in arms],
              "trials": [], "outputs": {}}
    try:
        for arm in arms:   # compile, warm up, hash the predict outputs
            run = launcher(arm)
            per_call_ms = run(20) / 20
            arm["n"] = max(20, int(args.active * 1000 / per_call_ms))
            if arm["kind"] == "predict":
                t = task(arm["g"], arm["q"])
                result["outputs"][arm["arm"]] = {
                    "scores_sha256": hashlib.sha256(t.scores.cpu().numpy().tobytes()).hexdigest(),
                    "predictions_sha256": hashlib.sha256(t.predictions.cpu().numpy().tobytes()).hexdigest(),
                    "ms": per_call_ms}
        for r in range(args.rounds):
            for i in range(len(arms)):
                arm = arms[(i + r) % len(arms)]
                idle_before = windows.idle_sample(settle_s=SETTLE_S, measure_s=IDLE_S)
                active, cuda_ms = windows.active_window(launcher(arm), arm["n"])
                idle_after = windows.idle_sample(settle_s=SETTLE_S, measure_s=IDLE_S)
                figures = en.trial_figures(idle_before.interval.average_power_w, idle_after.interval.average_power_w,
                                           active.energy_j, active.duration_s, arm["n"], cuda_ms)
                result["trials"].append({"round": r, "arm": arm["arm"], "launches": arm["n"], **figures,
                                         "active_w": active.average_power_w})
                print(f"r{r} {arm['arm']:>18}: {figures['cuda_ms_per_task']:.4f} ms, "
                      f"{figures['idle_adjusted_mj_per_task']:.3f} mJ idle-adjusted per launch, "
                      f"active {active.average_power_w:.1f} W, idle {figures['paired_idle_w']:.1f} W", flush=True)
                out.write_text(json.dumps(result, indent=1))
    except BundleError as exc:
        print(f"fused_energy_parts: {exc}", file=sys.stderr)
        out.write_text(json.dumps(result, indent=1))
        return 1
    summary = {}
    for arm in arms:
        mine = [t for t in result["trials"] if t["arm"] == arm["arm"]]
        summary[arm["arm"]] = {"ms": float(np.mean([t["cuda_ms_per_task"] for t in mine])),
                               "mj": float(np.mean([t["idle_adjusted_mj_per_task"] for t in mine]))}
    result["summary"] = summary
    out.write_text(json.dumps(result, indent=1))
    for name, s in summary.items():
        print(f"{name:>18}: {s['ms']:.4f} ms, {s['mj']:.3f} mJ per launch (mean of {args.rounds})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
