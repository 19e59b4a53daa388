"""Benchmark: ms per task and peak allocated bytes per cuBLAS workspace, side by side.

One driver process starts one fresh child per workspace config (``CUBLAS_WORKSPACE_CONFIG``
must be set before torch is imported, so a single process cannot switch it). Each child
prepares draw 0, runs one invocation, records the peak allocated bytes of that fresh task,
then times ``--replays`` further invocations with CUDA events. The driver prints the medians
and the ratios to ``:4096:8`` in one table. Prints figures; asserts nothing about speed.

Usage::

    python benchmarks/workspace_bench.py --replays 25
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

WORKSPACES = (":4096:8", ":16:8", ":0:0")
MIB = 1 << 20


def child(replays: int) -> None:
    """Measure in this (fresh) process and print one JSON line."""
    import torch  # noqa: PLC0415  (after the workspace variable is in the environment)
    from learner_bench import time_invocations  # noqa: PLC0415  (same folder)

    from bundle.learner import PreparedTask  # noqa: PLC0415
    from protocol.data import load_draw  # noqa: PLC0415

    inputs = load_draw(0).learner_inputs()
    torch.cuda.init()
    torch.cuda.reset_peak_memory_stats()
    task = PreparedTask(*inputs.values(), device="cuda")
    task.run()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    times_ms = time_invocations(task, replays)
    print(json.dumps({"workspace_config": os.environ["CUBLAS_WORKSPACE_CONFIG"],
                      "peak_allocated_bytes": peak, "median_ms_per_task": statistics.median(times_ms),
                      "min_ms": min(times_ms), "max_ms": max(times_ms), "replays": replays,
                      "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}))


def main() -> None:
    """Command-line entry: drive one child per workspace and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=25, help="timed invocations per workspace (>= 20)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    replays = max(20, args.replays)
    if args.child:
        child(replays)
        return
    rows = []
    for ws in WORKSPACES:
        env = dict(os.environ, CUBLAS_WORKSPACE_CONFIG=ws)
        out = subprocess.run([sys.executable, __file__, "--child", "--replays", str(replays)],
                             env=env, capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    base = rows[0]
    print(f"{rows[0]['gpu']}, torch {rows[0]['torch']}, {replays} replays per workspace (fresh process each)")
    print(f"{'workspace':>10} {'peak alloc MiB':>15} {'ratio':>7} {'median ms/task':>15} {'ratio':>7}")
    for row in rows:
        print(f"{row['workspace_config']:>10} {row['peak_allocated_bytes'] / MIB:15.4f} "
              f"{row['peak_allocated_bytes'] / base['peak_allocated_bytes']:7.4f} "
              f"{row['median_ms_per_task']:15.3f} {row['median_ms_per_task'] / base['median_ms_per_task']:7.4f}")


if __name__ == "__main__":
    main()
