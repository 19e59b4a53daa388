"""Benchmark of the frozen learner on draw 0: CPU wall time per draw and GPU ms per task.

Prints figures; asserts nothing about speed. Usage::

    python benchmarks/learner_bench.py                 # CPU, and CUDA if available
    python benchmarks/learner_bench.py --replays 50 --cpu-repeats 3

CUDA: one prepared task (graphs captured), one warm-up invocation, then ``--replays``
invocations each bracketed by CUDA events; median / min / max ms per task (the original's
steady state on an A100 was ~37.9 ms). CPU: ``--cpu-repeats`` fresh prepare + invocation
cycles (self-test included), median wall seconds per draw.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from bundle.learner import PreparedTask
from protocol.data import load_draw


def time_invocations(task: PreparedTask, replays: int) -> list[float]:
    """CUDA-event milliseconds of *replays* invocations of a prepared CUDA task, one per invocation."""
    times_ms = []
    for _ in range(replays):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        task.run()
        stop.record()
        stop.synchronize()
        times_ms.append(start.elapsed_time(stop))
    return times_ms


def bench_cuda(inputs: dict, replays: int) -> None:
    """Print median/min/max CUDA-event ms per task over *replays* graph invocations."""
    started = time.perf_counter()
    task = PreparedTask(*inputs.values(), device="cuda")
    prepare_s = time.perf_counter() - started
    task.run()
    torch.cuda.synchronize()
    first_hashes = task.state_hashes()
    times_ms = time_invocations(task, replays)
    same = task.state_hashes() == first_hashes
    print(f"cuda {torch.cuda.get_device_name()}: torch {torch.__version__}, prepare {prepare_s:.3f} s, "
          f"{replays} replays: median {statistics.median(times_ms):.3f} ms/task "
          f"(min {min(times_ms):.3f}, max {max(times_ms):.3f}); state hashes repeatable: {same}")


def bench_cpu(inputs: dict, repeats: int) -> None:
    """Print the median wall seconds of fresh prepare + one invocation on CPU."""
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        task = PreparedTask(*inputs.values(), device="cpu")
        task.run()
        task.outputs()
        seconds.append(time.perf_counter() - started)
    print(f"cpu ({torch.get_num_threads()} threads, torch {torch.__version__}): median "
          f"{statistics.median(seconds):.3f} s per draw (prepare + train + predict), "
          f"min {min(seconds):.3f}, max {max(seconds):.3f}, {repeats} repeats")


def main() -> None:
    """Command-line entry."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda", "all"), default="all")
    parser.add_argument("--replays", type=int, default=20, help="CUDA invocations timed (>= 20)")
    parser.add_argument("--cpu-repeats", type=int, default=3)
    args = parser.parse_args()
    inputs = load_draw(0).learner_inputs()
    if args.device in ("cpu", "all"):
        bench_cpu(inputs, args.cpu_repeats)
    if args.device in ("cuda", "all"):
        if torch.cuda.is_available():
            bench_cuda(inputs, max(20, args.replays))
        else:
            print("cuda: no CUDA device visible; skipped")


if __name__ == "__main__":
    main()
