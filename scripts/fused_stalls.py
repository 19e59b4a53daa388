"""Where the fused learner's training kernel spends its cycles: one Nsight Compute pass per launch shape.

Run from the repository root on a GPU host with ``ncu`` on PATH::

    OUT=$OUT PYTHONPATH=. python3 scripts/fused_stalls.py [--ctas 1,8] [--tool triton|cuda] [--defines NAME=V,...]

For each G a fresh child (``--child G``) prepares draw 0 as a ``FusedTask(ctas=G)`` at the
learner's defaults (``--tool cuda``: a :class:`bundle.fused_cuda.CudaFusedTask`) and runs one
invocation; ``ncu`` profiles its training launch (Triton: ``train_kernel`` for G = 1,
``grid_train_kernel`` otherwise; CUDA: ``rev88_train``) with the sections that say why warps
wait (speed of light, compute and memory workload, occupancy, launch statistics, scheduler,
warp state, source counters; for CUDA also instruction statistics and the shared-memory table).
Writes per G ``$OUT/stalls-g<G>.csv`` (CUDA: ``stalls-cuda-g<G>``, with ``--defines`` also the options, as
``stalls-cuda-g<G>-FT=8-BT=8``) (``ncu --page details --csv``) and ``$OUT/stalls-g<G>.ncu-rep`` (the report,
for ``ncu --import`` or ``ncu_report``); for CUDA also ``…-source-sass.csv`` (``ncu --page source``: every
SASS instruction with its stall samples per reason; the build carries line information, ``-lineinfo``, but
NVRTC's source is not on disk, so there is no per-CUDA-line page); and ``$OUT/fused-stalls.json`` (the
command lines, exit codes, the board and the tail of any error).
A measurement for choosing the next kernel design; the verifier does not read it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SECTIONS = ("SpeedOfLight", "ComputeWorkloadAnalysis", "MemoryWorkloadAnalysis", "Occupancy", "LaunchStats",
            "SchedulerStats", "WarpStateStats", "SourceCounters")
CUDA_SECTIONS = ("InstructionStats", "MemoryWorkloadAnalysis_Tables")
TIMEOUT_S = 240.0


def _defines(text: str) -> list[str]:
    """``--defines`` (``NAME=V,...``) as its items, empty ones dropped."""
    return [d for d in text.split(",") if d]


def child(ctas: int, tool: str = "triton", defines: str = "") -> int:
    """Run draw 0 once with ``ctas`` training programs of kernel tool ``tool`` (the profiled process); CUDA: the
    build carries line information (``-lineinfo``) and ``defines`` (NAME=V,...) are more -D options of it."""
    import torch  # noqa: PLC0415

    from bundle.data import load_draw  # noqa: PLC0415
    from bundle.fused_cuda import CudaFusedTask  # noqa: PLC0415
    from bundle.fused_learner import FusedTask  # noqa: PLC0415

    if tool == "cuda":
        class LineTask(CudaFusedTask):
            extra_defines = ("-lineinfo", *(f"-D{d}" for d in _defines(defines)))

        task = LineTask(**load_draw(0).learner_inputs(), device="cuda", ctas=ctas)
    else:
        task = FusedTask(**load_draw(0).learner_inputs(), device="cuda", ctas=ctas)
    task.run()
    torch.cuda.synchronize()
    _, meta = task.outputs()
    print(json.dumps({"ctas": ctas, "predictions_sha256": meta["predictions_sha256"]}))
    return 0


def profile(ctas: int, out: Path, tool: str = "triton", defines: str = "") -> dict:
    """One ncu run of a ``--child`` process; returns what ran and how it ended."""
    ncu = shutil.which("ncu")
    if ncu is None:
        return {"ctas": ctas, "error": "ncu is not on PATH"}
    if tool == "cuda":
        tag = "".join(f"-{d}" for d in _defines(defines))
        kernel, rep, sections = "rev88_train", out / f"stalls-cuda-g{ctas}{tag}", SECTIONS + CUDA_SECTIONS
    else:
        kernel, rep, sections = ("train_kernel" if ctas == 1 else "grid_train_kernel"), out / f"stalls-g{ctas}", SECTIONS
    cmd = [ncu, "--kernel-name", kernel, "--launch-count", "1", "--import-source", "no", "--force-overwrite",
           "--export", str(rep)]
    for section in sections:
        cmd += ["--section", section]
    cmd += [sys.executable, __file__, "--child", str(ctas), "--tool", tool, f"--defines={defines}"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env, check=False)
    except subprocess.TimeoutExpired:
        return {"ctas": ctas, "kernel": kernel, "command": cmd, "error": f"ncu ran past {TIMEOUT_S:.0f} s"}
    record = {"ctas": ctas, "kernel": kernel, "command": cmd, "rc": run.returncode,
              "stdout_tail": run.stdout[-1500:], "stderr_tail": run.stderr[-1500:]}
    report = rep.with_suffix(".ncu-rep")
    if run.returncode == 0 and report.exists():
        details = subprocess.run([ncu, "--import", str(report), "--page", "details", "--csv"], capture_output=True,
                                 text=True, timeout=TIMEOUT_S, check=False)
        rep.with_suffix(".csv").write_text(details.stdout)
        record["details_rc"] = details.returncode
        if tool == "cuda":   # per SASS instruction
            page = subprocess.run([ncu, "--import", str(report), "--page", "source", "--csv", "--print-source", "sass"],
                                  capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
            Path(f"{rep}-source-sass.csv").write_text(page.stdout)
            record["source_sass_rc"] = page.returncode
            record["source_sass_stderr"] = page.stderr[-500:]
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ctas", default="1,8", help="comma-separated training program counts (default 1,8)")
    parser.add_argument("--tool", choices=("triton", "cuda"), default="triton", help="kernel tool (default triton)")
    parser.add_argument("--child", type=int)
    parser.add_argument("--defines", default="", help="CUDA: more -D options, NAME=V,... (default none)")
    args = parser.parse_args(argv)
    if args.child is not None:
        return child(args.child, args.tool, args.defines)
    out = Path(os.environ.get("OUT") or ".")
    out.mkdir(parents=True, exist_ok=True)
    board = subprocess.run(["nvidia-smi", "--query-gpu=name,uuid,driver_version,clocks.max.sm", "--format=csv"],
                           capture_output=True, text=True, check=False).stdout
    result = {"schema": "fused-stalls/1", "board": board, "runs": []}
    for ctas in (int(x) for x in args.ctas.split(",")):
        result["runs"].append(profile(ctas, out, args.tool, args.defines))
        print(json.dumps({k: v for k, v in result["runs"][-1].items() if k != "command"})[-2000:], flush=True)
        (out / "fused-stalls.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
