"""Do idle CUDA contexts on the board change the L2 sectors a profiled range reads? (issue 13)

The ``range`` lock scope of the profile phase read 0.1-0.8 % more L2 read sectors per task than
the serialised ``process`` scope on the same board (docs/report-h200-20261202/HISTORY.md,
section 4). During a ``range`` run's range, up to eleven other runs wait for the exclusive lock
with a live CUDA context and their memory allocated, under their own ncu. This probe tests that
candidate alone, on one board, in one call:

* ``control``: the profile phase's own ncu command (bundle.profile.profile_argv, the five
  metrics, the phase's flags) for one ``:16:8`` fixture of scope *scope*, nothing else on the GPU;
* ``holders``: the same command while HOLDERS other processes, each under ncu with the same
  flags, hold an idle CUDA context with a warm cuBLAS handle and HOLDER_MIB MiB allocated (as a
  prepared run waiting for the lock does), started and ready before the profiled run starts.

The two conditions alternate (control, holders, control, holders, ...) until *rounds* pairs ran
or the deadline leaves too little time. Each run's per-task (or per-training) figures come from
bundle.profile.normalise_counters, as the phase's. The board's used memory (nvidia-smi) is read
just before each profiled run. Writes ``$OUT/l2-context-probe.json`` and prints one line per run
and the mean of each condition.

Usage (GPU host, repository root)::

    OUT=$OUT PYTHONPATH=. python3 scripts/l2_context_probe.py [--scope task] [--rounds 2] [--deadline 330]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bundle import archive
from bundle import profile as counters
from bundle.boards import placement_env
from bundle.jobs import WORKSPACE_ENV
from bundle.phases.profile import write_fixture_inputs

HOLDERS = 11
HOLDER_MIB = 64
WORKSPACE = ":16:8"
HOLDER_CODE = (
    "import sys, time, torch\n"
    "torch.cuda.init()\n"
    f"x = torch.empty({HOLDER_MIB} * 2**20 // 4, device='cuda')\n"
    "a = torch.ones(41, 41, device='cuda'); (a @ a).sum().item()\n"
    "torch.cuda.synchronize()\n"
    "open(sys.argv[1], 'w').write('ready')\n"
    "time.sleep(3600)\n"
)


def _used_mib() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unreadable: {exc}"


def _start_holders(ncu: str, workdir: Path, env: dict[str, str], wait_s: float) -> tuple[list, int]:
    procs, marks = [], []
    for k in range(HOLDERS):
        mark = workdir / f"holder-{k}.ready"
        mark.unlink(missing_ok=True)
        marks.append(mark)
        argv = [ncu, *counters.NCU_PROFILE_FLAGS, "--export", str(workdir / f"holder-{k}"),
                sys.executable, "-c", HOLDER_CODE, str(mark)]
        procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                                      start_new_session=True))
    deadline = time.perf_counter() + wait_s
    while time.perf_counter() < deadline and not all(m.exists() for m in marks):
        time.sleep(0.5)
    time.sleep(1.0)
    return procs, sum(m.exists() for m in marks)


def _stop(procs: list) -> None:
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for proc in procs:
        proc.wait()


def _profile(ncu: str, workdir: Path, inputs: tuple[Path, Path], scope: str, name: str,
             env: dict[str, str], extra_env: dict[str, str] | None = None) -> dict:
    fixture_out = workdir / f"{name}.fixture.json.gz"
    target = [sys.executable if a == "{python}" else a
              for a in counters.fixture_argv(str(inputs[0]), str(inputs[1]), str(fixture_out), scope)]
    argv = list(counters.profile_argv(ncu, str(workdir / name), target))
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env={**env, WORKSPACE_ENV: WORKSPACE, **(extra_env or {})},
                          timeout=300)
    wall = time.perf_counter() - started
    output = proc.stdout + "\n" + proc.stderr
    if proc.returncode != 0:
        return {"error": f"ncu exited {proc.returncode}", "tail": output[-2000:], "wall_s": wall}
    rows = counters.parse_raw_csv(output)
    sequences = counters.SEQUENCES_IN_RANGE[scope]
    figures = counters.normalise_counters(rows, sequences, scope)
    (workdir / f"{name}.ncu-rep").unlink(missing_ok=True)
    fixture = archive.read_json_gz(fixture_out)
    return {"wall_s": wall, "gpu_lock": (fixture.get("placement") or {}).get("gpu_lock"), "metric_rows": rows.metric_rows(), "figures": figures,
            "gpu_time_duration_ns": rows.gpu_time_duration_ns}


def _range_batch(args, ncu, env, workdir, inputs, result, t0) -> int:
    """control, *range_batch* runs at once under one 'range' lock, control (the phase's range way)."""
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    lock = placement_env(None, str(workdir / "gpu.lock"), lock_scope="range")
    result["design"] = f"control, {args.range_batch} at once under a range lock, control"
    runs = [{"condition": "control", **_profile(ncu, workdir, inputs, args.scope, "c0", env)}]
    with ThreadPoolExecutor(args.range_batch) as pool:
        batch = list(pool.map(lambda k: _profile(ncu, workdir, inputs, args.scope, f"r{k}", env, lock),
                              range(args.range_batch)))
    runs += [{"condition": "range", **r} for r in batch]
    if time.perf_counter() - t0 + args.run_estimate < args.deadline:
        runs.append({"condition": "control", **_profile(ncu, workdir, inputs, args.scope, "c1", env)})
    for run in runs:
        print(f"{run['condition']:8s} wall={run.get('wall_s', 0):.1f}s "
              f"l2_read={(run.get('figures') or {}).get('l2_read_request_bytes_per_sequence')} "
              f"hit={(run.get('figures') or {}).get('l2_sector_hit_rate_percent')} {run.get('error', '')}", flush=True)
    result["runs"] = runs
    return _finish(result, t0)


def _finish(result: dict, t0: float) -> int:
    by: dict[str, dict[str, list[float]]] = {}
    for run in result["runs"]:
        for key, value in (run.get("figures") or {}).items():
            if isinstance(value, int | float):
                by.setdefault(run["condition"], {}).setdefault(key, []).append(float(value))
    result["means"] = {c: {k: statistics.fmean(v) for k, v in figs.items()} for c, figs in by.items()}
    result["wall_s"] = time.perf_counter() - t0
    out = Path(os.environ.get("OUT") or ".") / "l2-context-probe.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["means"], indent=2))
    print(f"wrote {out}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scope", default="task", choices=("task", "training"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--deadline", type=float, default=330.0, help="no run starts after this many seconds")
    parser.add_argument("--range-batch", type=int, default=0,
                        help="instead of holders: control, then this many runs at once under a 'range' GPU lock "
                             "(the phase's --lock-scope range), then control again")
    parser.add_argument("--run-estimate", type=float, default=75.0, help="seconds one profiled run is expected to take")
    args = parser.parse_args()
    t0 = time.perf_counter()
    ncu = counters.find_ncu(None)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    workdir = Path(tempfile.mkdtemp(prefix="l2probe-"))
    inputs = write_fixture_inputs(workdir)
    result = {"schema": "l2-context-probe/1", "scope": args.scope, "workspace": WORKSPACE, "holders": HOLDERS,
              "holder_mib": HOLDER_MIB, "holder_code": HOLDER_CODE, "ncu": ncu,
              "command_flags": list(counters.NCU_PROFILE_FLAGS), "runs": []}
    if args.range_batch:
        return _range_batch(args, ncu, env, workdir, inputs, result, t0)
    for k in range(2 * args.rounds):
        condition = "control" if k % 2 == 0 else "holders"
        need = args.run_estimate + (40 if condition == "holders" else 0)
        if time.perf_counter() - t0 + need > args.deadline:
            result["runs"].append({"condition": condition, "skipped": "deadline"})
            break
        procs, ready = ([], 0)
        if condition == "holders":
            procs, ready = _start_holders(ncu, workdir, env, 60.0)
        run = {"condition": condition, "index": k, "holders_ready": ready, "used_memory_before": _used_mib()}
        try:
            run |= _profile(ncu, workdir, inputs, args.scope, f"run-{k}", env)
        except Exception as exc:  # a diagnostic: keep going, record it
            run["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            _stop(procs)
        result["runs"].append(run)
        fig = run.get("figures") or {}
        print(f"{condition:8s} ready={ready:2d} used={run['used_memory_before']} wall={run.get('wall_s', 0):.1f}s "
              f"fig={json.dumps(fig)[:400]} {run.get('error', '')}", flush=True)
    return _finish(result, t0)


if __name__ == "__main__":
    sys.exit(main())
