"""The qualify phase: train each of the 11 draws freshly, then (only then) score them.

Writes, through :class:`bundle.archive.RunArchive` staging (``run_dir/qualify/``):

* ``draw-XX.predictions.npy`` (int64, (10000,)) and ``draw-XX.json.gz`` (one record per draw:
  identity, index and input hashes, the eight state hashes, timing, device, software,
  hardware, cuBLAS workspace, frozen comparison);
* ``accuracy.json.gz``, written by :func:`score_predictions` after every prediction file
  exists; only the scorer reads evaluation labels (:func:`protocol.data.evaluation_labels`).

A per-draw *runner* ``runner(draw_index, inputs) -> (predictions, metadata, extra_record_fields)``
does the training; the default :class:`InProcessRunner` trains in this process (CPU eager or
CUDA graphs), :class:`bundle.phases.fixture_runner.FreshProcessRunner` uses one fixture process
per draw. Draws whose record is already staged are skipped (resume). torch is imported only
inside :class:`InProcessRunner`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bundle import archive
from bundle.archive import RunArchive
from bundle.phases.fixture_runner import check_resumed_launch, store_kernel_source
from bundle.preflight import frozen_members, require_frozen_reference
from protocol import hostrefs
from protocol.data import DRAW_COUNT, array_sha256, dataset_seed, evaluation_labels, load_draw
from protocol.errors import BundleError

PHASE = "qualify"
SCHEMA_VERSION = 1
#: Protocol-order frozen config (spec 2.1); equal to ``bundle.learner.FROZEN_CONFIG`` (no torch here).
PROTOCOL_CONFIG = {"alpha": 0.5, "batch_size": 128, "momentum": 0.9, "weight_decay": 0.0,
                   "seed": 11, "depth": 2, "epochs": 2, "learning_rate": 0.1}
#: The eight state-hash fields in the fixture/analyzer order (= ``bundle.learner.STATE_HASH_KEYS``).
STATE_HASH_KEYS = ("input_hashes", "initial_parameter_sha256", "epoch_permutation_sha256",
                   "final_parameter_sha256", "final_velocity_sha256", "state_vector_sha256",
                   "predictions_sha256", "scores_sha256")
REQUIRED_CORRECT_PER_DRAW = 8800   # 12 % error target: 96,800 of 110,000 (spec 9.1)
Runner = Callable[[int, Mapping[str, np.ndarray]], tuple[np.ndarray, dict, dict]]


def parse_draws(text: str) -> list[int]:
    """Parse ``"0-10"``, ``"0,3,5"`` or ``"4"`` into sorted unique draw indices.

    Each part's bounds are checked from its ends before the range is expanded, so a huge range
    is refused in one line instead of being built in memory.

    Raises:
        BundleError: malformed text, a reversed range (``10-0``) or an index outside 0…10.
    """
    draws: set[int] = set()
    for part in text.split(","):
        lo, dash, hi = part.strip().partition("-")
        try:
            first, last = int(lo), int(hi) if dash else int(lo)
        except ValueError:
            raise BundleError(f"--draws {text!r} is malformed: use e.g. 0-10, 0,3,5 or 4") from None
        if first > last:
            raise BundleError(f"--draws {text!r}: draw range {first}-{last} is reversed: write {last}-{first}")
        if first < 0 or last >= DRAW_COUNT:
            raise BundleError(f"--draws {text!r} selects draws outside 0-{DRAW_COUNT - 1}: "
                              f"pick draws 0-{DRAW_COUNT - 1}")
        draws.update(range(first, last + 1))
    return sorted(draws)


def frozen_draw(draw_index: int, original_dir: Path | None = None) -> dict[str, Any]:
    """The original draw's result metadata (``results/draw-XX.json``) and its accuracy row.

    Args:
        draw_index: the qualification draw (0…10).
        original_dir: the frozen reference folder (default: ``protocol.hostrefs.FROZEN_REFERENCE``'s
            search order: ``$REV88_ORIGINAL_DIR``, the checkout's copy, the image's copy).

    Raises:
        BundleError: no place holds the draw's files (one line naming the places and REV88_ORIGINAL_DIR).
    """
    members = [hostrefs.frozen_draw_member(draw_index), hostrefs.FROZEN_ACCURACY]
    if original_dir is None:
        original_dir = require_frozen_reference(members)
    result, accuracy = (Path(original_dir) / m for m in members)
    if not result.is_file() or not accuracy.is_file():
        raise BundleError(f"the frozen reference {original_dir} lacks {result.name} or {accuracy.name}: point "
                          f"{hostrefs.FROZEN_REFERENCE.env} at a copy of the repository's evidence/rev88-original")
    rows = {row["draw"]: row for row in json.loads(accuracy.read_text())["rows"]}
    return {"metadata": json.loads(result.read_text())["metadata"], "accuracy_row": rows[draw_index]}


def frozen_comparison(metadata: Mapping[str, Any], frozen: Mapping[str, Any]) -> dict[str, Any]:
    """Compare a run's metadata with the frozen original (predictions, initial parameters, orders)."""
    keys = ("predictions_sha256", "initial_parameter_sha256", "epoch_permutation_sha256")
    out: dict[str, Any] = {f"{k}_equal": metadata.get(k) == frozen["metadata"][k] for k in keys}
    out["input_hashes_equal"] = metadata.get("input_hashes") == frozen["metadata"]["input_hashes"]
    out["frozen"] = {k: frozen["metadata"][k] for k in keys}
    out["note"] = ("image bits come from the exact resize, not the original's platform-dependent float32 GEMM, "
                   "so input, final-parameter and score hashes are expected to differ")
    return out


class InProcessRunner:
    """Train a draw in this process with :func:`bundle.learner.prepare_task` (the default runner).

    Args:
        device: ``"cpu"`` (eager) or ``"cuda"`` (captured graphs).
        config: learner config (default: the frozen config).
    """

    def __init__(self, device: str = "cpu", config: Mapping[str, Any] | None = None) -> None:
        if device not in ("cpu", "cuda"):
            raise BundleError(f"--device {device!r} is not supported: use cpu or cuda")
        self.device = device
        self.config = dict(config) if config is not None else None

    def __call__(self, draw_index: int, inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, dict, dict]:
        """Prepare, run one invocation, return (predictions, metadata, timing/host fields)."""
        import torch  # noqa: PLC0415

        from bundle import hostinfo  # noqa: PLC0415
        from bundle.learner import PreparedTask  # noqa: PLC0415

        task = PreparedTask(inputs["train_images"], inputs["train_labels"], inputs["test_images"],
                            self.config, device=self.device)
        cuda_ms = None
        started = time.perf_counter()
        if self.device == "cuda":
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            task.run()
            stop.record()
            stop.synchronize()
            cuda_ms = start.elapsed_time(stop)
        else:
            task.run()
        predictions, metadata = task.outputs()
        seconds = time.perf_counter() - started
        software = hostinfo.software_record()
        gpu = torch.cuda.get_device_name(task.device) if self.device == "cuda" else None
        extra = {
            "timing": {"preparation_seconds": metadata["preparation_seconds"],
                       "train_predict_seconds": seconds, "cuda_ms": cuda_ms},
            "device": self.device,
            "software": {k: software[k] for k in ("python", "torch", "numpy", "cuda")},
            "hardware": {"cpu": hostinfo.cpu_record(), "gpu": gpu},
            "workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        }
        return predictions, metadata, extra


def draw_record(draw, metadata: Mapping[str, Any], extra: Mapping[str, Any], predictions_file: Path,
                runner_name: str, runner_seconds: float) -> dict[str, Any]:
    """Assemble ``draw-XX.json.gz`` (keys in a fixed order; runner fields appended)."""
    frozen = frozen_draw(draw.draw_index)
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "draw_index": draw.draw_index,
        "dataset_seed": draw.dataset_seed,
        "config": dict(PROTOCOL_CONFIG),
        "train_count": int(metadata["train_count"]),
        "test_count": int(metadata["test_count"]),
        **draw.index_hashes(),
        "train_test_disjoint": True,
        "resize": draw.resize,
        "runner": runner_name,
        **{k: metadata[k] for k in STATE_HASH_KEYS},
        "predictions_file": predictions_file.name,
        "predictions_file_sha256": archive.file_sha256(predictions_file),
        "timing": {"runner_wall_seconds": runner_seconds},
        "device": None, "software": None, "hardware": None,
        "workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    }
    for key, value in extra.items():
        if key == "timing":
            record["timing"].update(value)
        else:
            record[key] = value
    record["metadata"] = dict(metadata)
    record["frozen_comparison"] = frozen_comparison(metadata, frozen)
    return record


def _load_predictions(path: Path, count: int) -> np.ndarray:
    predictions = np.load(path, allow_pickle=False)
    if predictions.dtype != np.int64 or predictions.shape != (count,) or predictions.min() < 0 or predictions.max() > 9:
        raise BundleError(f"predictions file {path} is not int64 ({count},) in 0..9 "
                          f"(got {predictions.dtype} {predictions.shape}): delete it and rerun qualify")
    return predictions


def score_predictions(stage_dir: Path, draws: Sequence[int], raw_dir: Path | None = None) -> dict[str, Any]:
    """The scorer: read evaluation labels only now and build ``accuracy.json.gz``.

    Args:
        stage_dir: folder holding every ``draw-XX.predictions.npy`` of *draws*.
        draws: the draw indices scored.
        raw_dir: raw MNIST folder.

    Returns:
        Record: rows (draw, dataset_seed, correct, total, accuracy_percent, test_labels_sha256,
        confusion_matrix 10×10 rows = true class), correct, total, accuracy_percent,
        sample_sd_pp (numpy ddof 1, percentage points), error_percent, required_correct,
        meets_12_percent_error_target (correct ≥ required on the unrounded count),
        confusion_matrix (sum) and frozen_comparison.

    Raises:
        BundleError: a prediction file is missing or malformed (checked for all draws before
            any label is read).
    """
    files = {i: stage_dir / f"draw-{i:02d}.predictions.npy" for i in draws}
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise BundleError(f"predictions missing ({', '.join(missing)}): rerun qualify to produce them before scoring")
    predictions = {i: _load_predictions(p, 10_000) for i, p in files.items()}
    rows, total_confusion = [], np.zeros((10, 10), dtype=np.int64)
    frozen_rows = {}
    for i in draws:
        labels = evaluation_labels(i, raw_dir)
        confusion = np.bincount(10 * labels + predictions[i], minlength=100).reshape(10, 10)
        correct = int(np.trace(confusion))
        total_confusion += confusion
        rows.append({"draw": i, "dataset_seed": dataset_seed(i), "correct": correct, "total": int(labels.size),
                     "accuracy_percent": correct * 100 / labels.size, "test_labels_sha256": array_sha256(labels),
                     "confusion_matrix": confusion.tolist()})
        frozen_rows[i] = frozen_draw(i)["accuracy_row"]
    correct = sum(r["correct"] for r in rows)
    total = sum(r["total"] for r in rows)
    accuracy = correct * 100 / total
    percents = np.array([r["accuracy_percent"] for r in rows])
    required = REQUIRED_CORRECT_PER_DRAW * len(rows)
    frozen_correct = sum(frozen_rows[i]["correct"] for i in draws)
    return {
        "schema_version": SCHEMA_VERSION,
        "evaluated_at_utc": archive.utc_now(),
        "draws": list(draws),
        "complete_protocol": list(draws) == list(range(DRAW_COUNT)),
        "rows": rows,
        "correct": correct, "total": total, "accuracy_percent": accuracy,
        "sample_sd_pp": float(np.std(percents, ddof=1)) if len(rows) > 1 else None,
        "error_percent": 100 - accuracy,
        "required_correct": required,
        "meets_12_percent_error_target": correct >= required,
        "confusion_matrix": total_confusion.tolist(),
        "frozen_comparison": {
            "rows": [{"draw": i, "correct": r["correct"], "frozen_correct": frozen_rows[i]["correct"],
                      "correct_equal": r["correct"] == frozen_rows[i]["correct"],
                      "test_labels_sha256_equal": r["test_labels_sha256"] == frozen_rows[i]["test_labels_sha256"]}
                     for i, r in zip(draws, rows, strict=True)],
            "correct": correct, "frozen_correct": frozen_correct, "correct_equal": correct == frozen_correct,
        },
    }


def overlaps(spans: Mapping[int, tuple[float, float]]) -> dict[int, list[int]]:
    """For each draw, the draws whose (start, end) span overlaps its own (s, one clock)."""
    return {i: sorted(j for j, (s2, e2) in spans.items() if j != i and s2 < e1 and s1 < e2)
            for i, (s1, e1) in spans.items()}


def run_qualification(run_dir: Path, *, device: str = "cpu", raw_dir: Path | None = None,
                      draws: Iterable[int] = range(DRAW_COUNT), runner: Runner | None = None,
                      force: bool = False, resize: str = "exact",
                      on_draw: Callable[[int, str], None] | None = None, jobs: int = 1) -> dict[str, Any]:
    """Train every selected draw (skipping staged ones), then score; complete ``run_dir/qualify``.

    Args:
        run_dir: the run archive folder.
        device: for the default runner: ``"cpu"`` or ``"cuda"``.
        raw_dir: raw MNIST folder (default :func:`protocol.data.default_raw_dir`).
        draws: draw indices (default 0…10).
        runner: per-draw runner ``(draw_index, inputs) -> (predictions, metadata, extra_fields)``;
            default :class:`InProcessRunner` (*device*).
        force: replace an already completed qualify phase.
        resize: :data:`protocol.data.RESIZE_METHODS` entry for the images.
        on_draw: progress callback ``(draw_index, status)`` with status ``"start"``, ``"done"`` or ``"resumed"``.
        jobs: draws trained at the same time (threads calling *runner*; meant for a fresh-process
            runner, whose processes may share a board). Each record's ``concurrency`` says which
            draws ran beside it (``ran_alone``); memory figures and predictions are per process,
            timing figures of a draw that did not run alone are not alone-timings.

    Returns:
        ``{"records": {draw: record}, "accuracy": accuracy record, "all_predictions_equal_frozen": bool}``.

    Raises:
        BundleError: bad inputs, a runner failure (finished draws stay staged), or the frozen
            reference lacks a selected draw (checked before anything is written).
    """
    draws = sorted(draws)
    require_frozen_reference(frozen_members([PHASE], qualify_draws=draws))
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise BundleError(f"--jobs must be a positive integer (got {jobs!r})")
    runner = runner if runner is not None else InProcessRunner(device)
    if jobs > 1 and isinstance(runner, InProcessRunner):
        raise BundleError(f"--jobs {jobs} needs fresh processes (one per draw): threads of one process share "
                          "torch's state; add --fresh-process or use --jobs 1")
    runner_name = "in-process" if isinstance(runner, InProcessRunner) else type(runner).__name__
    run = RunArchive(run_dir)
    records: dict[int, dict[str, Any]] = {}
    with run.phase(PHASE, force=force) as stage:
        todo = []
        for i in draws:
            name = f"draw-{i:02d}.json.gz"
            if stage.has(name) and stage.has(f"draw-{i:02d}.predictions.npy"):
                records[i] = archive.read_json_gz(stage / name)
                check_resumed_launch((records[i].get("fixture") or {}).get("learner"), f"{stage.path}/{name}")
                on_draw and on_draw(i, "resumed")
            else:
                todo.append(i)
        origin, origin_utc = time.perf_counter(), archive.utc_now()
        spans: dict[int, tuple[float, float]] = {}

        def train(i: int) -> tuple[Any, Any, tuple[np.ndarray, dict, dict]]:
            on_draw and on_draw(i, "start")
            draw = load_draw(i, raw_dir, resize=resize)
            started = time.perf_counter()
            try:
                out = runner(i, draw.learner_inputs())
            finally:
                spans[i] = (started - origin, time.perf_counter() - origin)
            return draw, started, out

        def store(i: int, draw: Any, out: tuple[np.ndarray, dict, dict], peers: list[int]) -> None:
            predictions, metadata, extra = out
            predictions = np.ascontiguousarray(predictions, dtype=np.int64)
            if array_sha256(predictions) != metadata["predictions_sha256"]:
                raise BundleError(f"draw {i}: predictions do not match the runner's predictions_sha256: report a bug")
            npy = archive.write_npy(stage / f"draw-{i:02d}.predictions.npy", predictions)
            start, end = spans[i]
            records[i] = draw_record(draw, metadata, extra, npy, runner_name, end - start)
            records[i]["concurrency"] = {
                "jobs": jobs, "invocation_started_at_utc": origin_utc,
                "started_s": round(start, 3), "finished_s": round(end, 3),
                "overlapping_draws": peers, "ran_alone": not peers,
                "scope": "seconds since this qualification invocation (invocation_started_at_utc) began "
                         "training; draws of the same invocation whose runner calls overlapped this one's "
                         "(they may have shared the GPU)"}
            archive.write_json_gz(stage / f"draw-{i:02d}.json.gz", records[i])
            on_draw and on_draw(i, "done")

        if jobs == 1:
            for i in todo:
                draw, _, out = train(i)
                store(i, draw, out, [])
        else:
            from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait  # noqa: PLC0415

            from bundle.jobs import stop_jobs  # noqa: PLC0415

            pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="qualify")
            interrupted: BaseException | None = None
            try:
                futures = {i: pool.submit(train, i) for i in todo}
                try:
                    wait(futures.values(), return_when=FIRST_EXCEPTION)
                except BaseException as exc:  # Ctrl-C / SIGTERM: the draws' jobs run outside this process
                    interrupted = exc
                    stop_jobs(futures.values())
                if any(f.done() and not f.cancelled() and f.exception() is not None for f in futures.values()):
                    for f in futures.values():
                        f.cancel()  # draws not yet started are not started
                wait(futures.values())
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
            peers = overlaps(spans)
            finished = [i for i in todo if not futures[i].cancelled() and futures[i].exception() is None]
            for i in finished:  # finished draws stay staged, also when another draw failed or on an interrupt
                draw, _, out = futures[i].result()
                store(i, draw, out, peers[i])
            if interrupted is not None:
                raise interrupted
            errors = [futures[i].exception() for i in todo if not futures[i].cancelled()
                      and futures[i].exception() is not None]
            if errors:
                raise errors[0]
        accuracy = score_predictions(stage.path, draws, raw_dir)
        archive.write_json_gz(stage / "accuracy.json.gz", accuracy)
        store_kernel_source(run.run_dir, stage.path)   # the CUDA tool's source beside its records
    _record_execution(run, records)
    equal = all(r["frozen_comparison"]["predictions_sha256_equal"] for r in records.values())
    return {"records": records, "accuracy": accuracy, "all_predictions_equal_frozen": equal}


def _record_execution(run: RunArchive, records: Mapping[int, Mapping[str, Any]]) -> None:
    """State where the qualification ran: the first fresh-process record's execution, else this
    process (in-process runner: engine and image from the job environment, image marker read here)."""
    from bundle import hostinfo  # noqa: PLC0415

    first = next(iter(records.values()))
    if "fixture" in first and "execution" in first["fixture"]:
        # one entry per board the draws ran on (record_execution merges equal ones)
        for record in records.values():
            if isinstance((record.get("fixture") or {}).get("execution"), dict):
                run.record_execution(PHASE, record["fixture"]["execution"])
        return
    # The draws ran in this process: its nvidia-ml-py is theirs (the draw records keep the original's four keys).
    software = {**(first.get("software") or {}), "nvidia_ml_py": hostinfo.software_record()["nvidia_ml_py"]}
    recorded = first.get("hardware") or {}
    hardware = {"name": recorded.get("gpu"), "uuid": None, "driver_version": None,
                "cpu": recorded.get("cpu") if isinstance(recorded.get("cpu"), dict) else None}
    engine, image = hostinfo.execution_engine()
    run.record_execution(PHASE, hostinfo.execution_record(engine, image, hardware, software))
