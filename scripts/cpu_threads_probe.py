"""Which CPU learner hashes depend on torch's intra-op thread count on this CPU?

For every selected thread count (``torch.set_num_threads``) and draw, one prepared CPU task
(:class:`bundle.learner.PreparedTask`, frozen config, exact 9x9 resize) runs two invocations
in this process. Each row records the CPU (:func:`bundle.hostinfo.cpu_record`), the torch
version, the thread count, ``predictions_sha256`` (and whether it equals the frozen
original's), ``final_parameter_sha256``, ``final_velocity_sha256``, ``state_vector_sha256``,
``scores_sha256`` and whether the second invocation reproduced the first's state hashes.
``summary`` lists, per draw, which hash fields are equal at every thread count and which vary.

The JSON table is printed and, with ``--out``, written atomically (canonical JSON).

Usage::

    python scripts/cpu_threads_probe.py --draws 0,1 --threads 1,2,4,8 --out probe.json

Errors (bad options, missing MNIST files) print one line and exit 2.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # `python scripts/cpu_threads_probe.py` from a checkout without an install
    sys.path.insert(0, str(REPO_ROOT))

from bundle.errors import BundleError  # noqa: E402

SCHEMA = "rev88-cpu-threads-probe/1"
HASH_FIELDS = ("initial_parameter_sha256", "epoch_permutation_sha256", "final_parameter_sha256",
               "final_velocity_sha256", "state_vector_sha256", "predictions_sha256", "scores_sha256")
MAX_THREADS = 1024


def parse_threads(text: str) -> list[int]:
    """Parse ``"1,2,4,8"`` into thread counts (kept in the given order, duplicates dropped).

    Raises:
        BundleError: an entry that is not an integer in 1..1024, or an empty list.
    """
    counts: list[int] = []
    for part in text.split(","):
        try:
            value = int(part.strip())
        except ValueError:
            raise BundleError(f"--threads {text!r} is malformed: use e.g. 1,2,4,8") from None
        if not 1 <= value <= MAX_THREADS:
            raise BundleError(f"--threads {text!r}: each count must be in 1..{MAX_THREADS}")
        if value not in counts:
            counts.append(value)
    if not counts:
        raise BundleError(f"--threads {text!r} selects no thread count: use e.g. 1,2,4,8")
    return counts


def probe_row(draw_index: int, threads: int, raw_dir: Path | None) -> dict[str, Any]:
    """Train *draw_index* twice in one prepared CPU task at *threads* intra-op threads.

    Returns:
        A row: ``draw``, ``cpu`` (:func:`bundle.hostinfo.cpu_record` while the task ran), the
        hash fields of :data:`HASH_FIELDS` from the first invocation, ``predictions_equal_frozen``,
        ``second_invocation_state_equal`` (all eight state hashes equal) and ``seconds`` (wall
        time of the two invocations, s).

    Raises:
        BundleError: missing or corrupt MNIST files, missing frozen evidence.
    """
    import torch  # noqa: PLC0415

    from bundle import hostinfo  # noqa: PLC0415
    from bundle.data import load_draw  # noqa: PLC0415
    from bundle.learner import PreparedTask  # noqa: PLC0415
    from bundle.phases.qualify import frozen_draw  # noqa: PLC0415

    torch.set_num_threads(threads)
    inputs = load_draw(draw_index, raw_dir).learner_inputs()
    task = PreparedTask(inputs["train_images"], inputs["train_labels"], inputs["test_images"], device="cpu",
                        run_selftest=False)
    started = time.perf_counter()
    task.run()
    _, metadata = task.outputs()
    first = task.state_hashes()
    task.run()
    second = task.state_hashes()
    seconds = time.perf_counter() - started
    frozen = frozen_draw(draw_index)["metadata"]["predictions_sha256"]
    return {
        "draw": draw_index,
        "cpu": hostinfo.cpu_record(),
        **{key: metadata[key] for key in HASH_FIELDS},
        "predictions_equal_frozen": metadata["predictions_sha256"] == frozen,
        "second_invocation_state_equal": first == second,
        "seconds": seconds,
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per draw: hash fields equal at every thread count, and those that vary (with distinct counts)."""
    out: dict[str, Any] = {}
    for draw in sorted({row["draw"] for row in rows}):
        mine = [row for row in rows if row["draw"] == draw]
        distinct = {key: len({json.dumps(row[key], sort_keys=True) for row in mine}) for key in HASH_FIELDS}
        out[f"draw-{draw:02d}"] = {
            "thread_counts": [row["cpu"]["torch_num_threads"] for row in mine],
            "equal_at_every_thread_count": [k for k in HASH_FIELDS if distinct[k] == 1],
            "varying_across_thread_counts": {k: distinct[k] for k in HASH_FIELDS if distinct[k] > 1},
            "predictions_equal_frozen_at_every_thread_count": all(r["predictions_equal_frozen"] for r in mine),
            "second_invocation_state_equal_at_every_thread_count": all(
                r["second_invocation_state_equal"] for r in mine),
        }
    return out


def run_probe(draws: list[int], threads: list[int], raw_dir: Path | None = None) -> dict[str, Any]:
    """The whole table: host facts, one row per (thread count, draw), and the summary.

    The thread count in force before the probe is restored afterwards.
    """
    import numpy  # noqa: PLC0415
    import torch  # noqa: PLC0415

    from bundle import hostinfo  # noqa: PLC0415

    before = torch.get_num_threads()
    host = hostinfo.cpu_record()
    rows: list[dict[str, Any]] = []
    try:
        for count in threads:
            for draw in draws:
                rows.append(probe_row(draw, count, raw_dir))
                print(f"draw {draw} at {count} threads: predictions {rows[-1]['predictions_sha256'][:12]}, "
                      f"state vector {rows[-1]['state_vector_sha256'][:12]}", file=sys.stderr)
    finally:
        torch.set_num_threads(before)
    capability = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
    return {
        "schema": SCHEMA,
        "cpu_model": host["model"],
        "logical_cpus": host["logical_cpus"],
        "default_torch_num_threads": host["torch_num_threads"],
        "torch_num_interop_threads": host["torch_num_interop_threads"],
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
        "torch_cpu_capability": capability() if capability is not None else None,
        "mkl_available": bool(torch.backends.mkl.is_available()),
        "mkldnn_available": bool(torch.backends.mkldnn.is_available()),
        "draws": draws,
        "thread_counts": threads,
        "rows": rows,
        "summary": summarise(rows),
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry; returns the exit status (0, or 2 with one error line)."""
    from bundle.phases.qualify import parse_draws  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", default="0", help="draw indices, e.g. 0,1 or 0-10 (default 0)")
    parser.add_argument("--threads", default="1,2,4,8", help="intra-op thread counts (default 1,2,4,8)")
    parser.add_argument("--raw-dir", type=Path, default=None, help="raw MNIST folder (default data/mnist)")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON table here (atomically)")
    args = parser.parse_args(argv)
    try:
        from bundle import archive  # noqa: PLC0415

        table = run_probe(parse_draws(args.draws), parse_threads(args.threads), args.raw_dir)
        if args.out is not None:
            archive.write_json(args.out, table)
    except BundleError as exc:
        print(f"cpu_threads_probe: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except ImportError as exc:
        print(f"cpu_threads_probe: error: {exc}: install the learner extra (pip install -e '.[learner]')",
              file=sys.stderr)
        return 2
    print(archive.dumps_canonical(table), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
