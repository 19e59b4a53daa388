"""Fixture jobs: write a task's inputs, build the fixture's JobSpec, run it, read its record.

Used by the compare, validate and qualify phases (and available to energy/profile): every
fixture runs in a fresh process started by an :class:`~bundle.jobs.Engine`, with
``CUBLAS_WORKSPACE_CONFIG`` set only in the job's environment (spec 4.3).

:class:`FreshProcessRunner` is the per-draw runner that ``bundle.phases.qualify`` accepts
(``runner(draw_index, inputs) -> (predictions, metadata, extra_record_fields)``).

No torch here: the fixture process does the GPU work.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import importlib.resources
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bundle import archive
from bundle.jobs import (
    FUSED_CTAS_ENV,
    FUSED_EXCHANGE_ENV,
    FUSED_KERNEL_ENV,
    FUSED_PRECISION_ENV,
    Engine,
    JobSpec,
    fused_exchange,
    fused_kernel_tool,
    fused_launch_problem,
    fused_product_precision,
    fused_train_programs,
)
from protocol.archive_format import KERNEL_SOURCE_REL
from protocol.errors import BundleError
from protocol.fixture_inputs import INPUT_KEYS, npz_bytes  # noqa: F401  (re-exported)
from protocol.workspaces import workspace_stem  # noqa: F401  (re-exported)

PREFERRED_WORKSPACE = ":16:8"
FIXTURE_TIMEOUT_S = 1800.0


def draw_inputs(inputs: Mapping[str, np.ndarray] | None, config: Mapping[str, Any] | None, *, draw_index: int,
                raw_dir: str | Path | None) -> tuple[Mapping[str, np.ndarray], Mapping[str, Any]]:
    """The learner inputs and config a phase runs: the given ones, else draw *draw_index*'s inputs
    (from the raw MNIST files) and the frozen config.

    Raises:
        BundleError: a raw file fails its sha256 check.
    """
    if inputs is None:
        from protocol.data import load_draw  # noqa: PLC0415

        inputs = load_draw(draw_index, raw_dir).learner_inputs()
    if config is None:
        from bundle.learner import FROZEN_CONFIG  # noqa: PLC0415  (imports torch; does not initialise CUDA)

        config = FROZEN_CONFIG
    return inputs, config


def write_fixture_inputs(folder: Path, inputs: Mapping[str, np.ndarray], config: Mapping[str, Any],
                         *, stem: str = "input") -> tuple[Path, Path]:
    """Write ``<stem>.npz`` (exactly the three arrays, in spec 1.6 order) and ``config.json``.

    Args:
        folder: destination folder (created).
        inputs: ``train_images`` float32 (N,1,9,9), ``train_labels`` int64 (N,), ``test_images``
            float32 (M,1,9,9); any other key is refused.
        config: learner config, written as canonical JSON (the frozen config gives the original's
            ``config_file_sha256`` a4cf957d…).

    Returns:
        (npz path, config path), absolute.

    Raises:
        BundleError: a key other than the three.
    """
    if set(inputs) != set(INPUT_KEYS):
        raise BundleError(f"fixture inputs must be exactly {', '.join(INPUT_KEYS)} (got {sorted(inputs)}): "
                          "never pass evaluation labels to the learner")
    folder = Path(folder).resolve()
    npz = archive.atomic_write_bytes(folder / f"{stem}.npz", npz_bytes({k: inputs[k] for k in INPUT_KEYS}))
    cfg = archive.write_json(folder / "config.json", dict(config))
    return npz, cfg


def engine_env(engine: Engine) -> dict[str, str]:
    """Environment a fixture job gets to describe its engine (``REV88_ENGINE``, ``REV88_IMAGE_REFERENCE``),
    plus the host's ``REV88_FUSED_CTAS``, ``REV88_FUSED_PRECISION``, ``REV88_FUSED_KERNEL`` and
    ``REV88_FUSED_EXCHANGE`` when set (the rev88-fused training programs, product precision, kernel tool and
    the CUDA tool's split-update exchange; every engine passes them,
    the Docker one included).

    Raises:
        BundleError: one is set but malformed (:func:`bundle.jobs.fused_train_programs`,
            :func:`bundle.jobs.fused_product_precision`, :func:`bundle.jobs.fused_kernel_tool`,
            :func:`bundle.jobs.fused_exchange`), or they ask for what no kernel runs together
            (:func:`bundle.jobs.fused_launch_problem`: the CUDA tool at tf32x3, push with Triton or
            outside 4 to 8 training programs).
    """
    env = {"REV88_ENGINE": str(getattr(engine, "kind", "native"))}
    problem = fused_launch_problem()   # a bad value or combination is refused here, before the phase's first job
    if problem:
        raise BundleError(problem)
    for name in (FUSED_CTAS_ENV, FUSED_PRECISION_ENV, FUSED_KERNEL_ENV, FUSED_EXCHANGE_ENV):
        if os.environ.get(name, "").strip():
            env[name] = os.environ[name]
    image = getattr(engine, "image_reference", None)
    if image:
        env["REV88_IMAGE_REFERENCE"] = str(image)
    return env


#: the CUDA kernel tool's source (bundle.fused_cuda.KERNEL_SOURCE, package data of ``bundle``, named here
#: without importing torch)
CUDA_KERNEL_SOURCE = Path(str(importlib.resources.files("bundle").joinpath("fused_cuda.cu")))


def store_kernel_source(run_dir: str | os.PathLike[str], stage: str | os.PathLike[str],
                        source: Path = CUDA_KERNEL_SOURCE) -> Path | None:
    """Keep the CUDA kernel source in the run folder when a phase's records ran it.

    Reads every JSON record staged under *stage* (the phase's staging folder, before it completes); where a
    ``learner`` block (the record's own, or its ``fixture``'s) names ``kernel_tool: cuda``, the bytes of
    *source* (bundle/fused_cuda.cu, whose sha256 those blocks name as ``kernel_source_sha256``) are written
    gzipped to ``<run_dir>/fused_cuda.cu.gz`` (:data:`KERNEL_SOURCE_REL`; atomically, listed in the
    manifest when the phase completes). The verifier hashes that copy against the records and reads the
    launch layout the source declares from it (``verify.checks.run_energy.parse_layout``).

    Returns:
        The path written (or already there with the same bytes), or None when no record ran the CUDA tool.

    Raises:
        BundleError: the records name another source sha256 than *source*'s (the jobs compiled other bytes than
            this checkout holds), or the run folder already keeps another source.
    """
    shas = set()
    for path in sorted(Path(stage).rglob("*.json*")):
        if not path.is_file() or not path.name.endswith((".json", ".json.gz")):
            continue
        rec = archive.read_json_gz(path)
        if not isinstance(rec, Mapping):
            continue
        for block in (rec.get("learner"), (rec.get("fixture") or {}).get("learner")
                      if isinstance(rec.get("fixture"), Mapping) else None):
            if isinstance(block, Mapping) and block.get("kernel_tool") == "cuda":
                shas.add(str(block.get("kernel_source_sha256")))
    if not shas:
        return None
    data = Path(source).read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    if shas != {sha}:
        raise BundleError(f"the phase's CUDA-tool records name kernel source {', '.join(s[:16] + '…' for s in sorted(shas))}"
                          f" but {source} is {sha[:16]}…: run the phase from the checkout whose kernel its jobs compile")
    dest = Path(run_dir) / KERNEL_SOURCE_REL
    if dest.exists():
        kept = gzip.decompress(dest.read_bytes())
        if kept == data:
            return dest
        raise BundleError(f"{dest} keeps kernel source {hashlib.sha256(kept).hexdigest()[:16]}…, this phase ran "
                          f"{sha[:16]}…: an archive holds one kernel source; use another --out folder")
    return archive.write_bytes_gz(dest, data)


def check_resumed_launch(block: Any, where: str) -> None:
    """Refuse to resume with a kept ``rev88-fused`` record made at another training-program count,
    product precision (absent in records made before it was recorded: ``"ieee"``), exchange (absent:
    ``"pull"``; Triton records have none) or kernel tool
    (absent before it was recorded: ``"triton"``).

    *block* is the record's ``learner`` block (None or a ``rev88`` block: nothing to check); its
    ``train_programs`` (absent in records made before it was recorded: 1) must equal what the
    host's ``REV88_FUSED_CTAS`` asks for now (unset: :data:`bundle.jobs.FUSED_DEFAULT_CTAS`), since
    an archive may hold one launch shape only (the verifier's ``energy.learners.train_programs``).

    Raises:
        BundleError: the counts differ, or the variable is malformed.
    """
    if not isinstance(block, Mapping) or block.get("name") != "rev88-fused":
        return
    want = fused_train_programs()
    got = block.get("train_programs")
    got = 1 if got is None else got
    if got != want:
        raise BundleError(f"{where} was made with {got} rev88-fused training programs, but {FUSED_CTAS_ENV} asks for "
                          f"{want} now: resume with {FUSED_CTAS_ENV}={got}, or start the phase over with --force")
    for key, env, want, absent in (("product_precision", FUSED_PRECISION_ENV, fused_product_precision(), "ieee"),
                                   ("kernel_tool", FUSED_KERNEL_ENV, fused_kernel_tool(), "triton"),
                                   ("exchange", FUSED_EXCHANGE_ENV, fused_exchange(), "pull")):
        got = block.get(key) or absent
        if got != want:
            raise BundleError(f"{where} was made with rev88-fused {key.replace('_', ' ')} {got}, but {env} asks for "
                              f"{want} now: resume with {env}={got}, or start the phase over with --force")


def fixture_job(name: str, *, engine: Engine, npz: Path, config: Path, output: Path, workspace: str,
                mode: str = "measure", scope: str = "task", repeats: int = 16, device: str = "cuda",
                extra_args: tuple[str, ...] = (), prefix: tuple[str, ...] = ("{python}",),
                cap_sys_admin: bool = False, timeout_s: float = FIXTURE_TIMEOUT_S) -> JobSpec:
    """The :class:`JobSpec` of one fixture process.

    Args:
        name: job name (``"compare/workspace-16-8"``).
        engine: the engine that will run it (its kind/image go into the child's environment).
        npz, config, output: absolute paths inside the job's workdir (``output.parent``).
        workspace: ``CUBLAS_WORKSPACE_CONFIG`` for the child (set only here).
        mode, scope, repeats, device: fixture options.
        extra_args: more fixture options (``--energy``, ``--energy-config``).
        prefix: what runs the interpreter; ``("ncu", ..., "{python}")`` for a profile.
        cap_sys_admin: performance counters in a container.
        timeout_s: wall-clock limit.
    """
    argv = (*prefix, "-m", "bundle.fixture", "--input", str(npz), "--config", str(config), "--output",
            str(output), "--mode", mode, "--scope", scope, "--repeats", str(repeats), "--device", device,
            *extra_args)
    env = {"CUBLAS_WORKSPACE_CONFIG": workspace, **engine_env(engine)}
    return JobSpec(name=name, argv=argv, env=env, workdir=Path(output).parent, timeout_s=timeout_s,
                   gpu=device == "cuda", cap_sys_admin=cap_sys_admin)


def run_fixture_job(engine: Engine, spec: JobSpec, output: Path,
                    on_line: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run *spec* and return the record it wrote at *output*.

    Raises:
        BundleError: non-zero exit (with the job's last error line) or no record written.
    """
    result = engine.run(spec, on_line=on_line)
    if not result.ok:
        raise BundleError(f"fixture job {spec.name} failed (exit {result.exit_code}): {result.last_error_line()}; "
                          "fix the cause and rerun the phase (finished jobs are kept)")
    if not Path(output).is_file():
        raise BundleError(f"fixture job {spec.name} exited 0 but wrote no record at {output}: rerun the phase")
    return archive.read_json_gz(output)


def gpu_lock_path(workdir: Path, board: Any | None) -> Path:
    """The GPU lock file of *board* (``None``: the engine's default device) under *workdir*."""
    name = "default" if board is None else str(board.uuid)
    return Path(workdir).resolve() / f"gpu-{name}.lock"


def run_overlapped(jobs: Sequence[Callable[[], Any]], width: int, turn_file: Path | None = None) -> list[Any]:
    """Call *jobs* in order, at most *width* at a time (threads); results in the jobs' order.

    Meant for fixture jobs that share a GPU lock (``bundle.boards.LOCK_ENV``): the next job's
    process starts (interpreter, imports, inputs: CPU only) while the previous one holds the GPU,
    and no two hold the GPU at once. With *turn_file* (``<lock>.turn``) job k must carry ticket k
    (``bundle.boards.TICKET_ENV``): the file is set to 0 here, each process advances it when it
    takes the lock, and a job that ends without taking it (a staged record, a crash) advances it
    here, so the jobs hold the GPU in this order. With ``width == 1`` the jobs run one after another.

    Failure: the first job that raises stops the rest. Jobs not yet started are cancelled, the turn
    file is set to ``-1`` (processes still waiting for their turn refuse to run; one already past its
    turn check, such as a pre-started job that took the lock as the failed one exited, runs to its
    end), running jobs are waited for, then the first exception is raised. An interrupt (Ctrl-C,
    or SIGTERM as :class:`bundle.jobs.Terminated`) while jobs run sets the turn to ``-1``, cancels
    what has not started and stops the running jobs of every engine (:func:`bundle.jobs.stop_jobs`:
    process groups killed, containers killed and removed, Slurm jobs cancelled), then re-raises.
    """
    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait  # noqa: PLC0415

    def set_turn(value: int, *, only_if_below: bool) -> None:
        if turn_file is None:
            return
        from bundle.boards import update_turn  # noqa: PLC0415  (its flock also orders this process's threads)

        update_turn(turn_file, value, only_if_below=only_if_below)

    def wrapped(k: int, job: Callable[[], Any]) -> Any:
        try:
            return job()
        finally:
            set_turn(k + 1, only_if_below=True)

    if turn_file is not None:
        archive.atomic_write_bytes(turn_file, b"0\n")
    if width <= 1:
        results = []
        for k, job in enumerate(jobs):
            try:
                results.append(wrapped(k, job))
            except BaseException:
                set_turn(-1, only_if_below=False)
                raise
        return results
    pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="fixture")
    try:
        futures = [pool.submit(wrapped, k, job) for k, job in enumerate(jobs)]
        try:
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        except BaseException:  # Ctrl-C / SIGTERM: it does not reach the jobs (own sessions, containers, Slurm)
            from bundle.jobs import stop_jobs  # noqa: PLC0415

            set_turn(-1, only_if_below=False)
            stop_jobs(futures)
            raise
        failed = [f for f in futures if f in done and f.exception() is not None]
        if failed:
            set_turn(-1, only_if_below=False)
            for future in futures:
                future.cancel()
            wait(futures)
            raise failed[0].exception()
        return [future.result() for future in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def load_predictions(record_path: Path, record: Mapping[str, Any]) -> np.ndarray:
    """The predictions file named by a fixture *record*, checked against its recorded sha.

    Returns:
        int64 (M,).

    Raises:
        BundleError: missing file, sha mismatch, or not int64 1-D.
    """
    path = Path(record_path).parent / record["predictions_file"]
    if not path.is_file():
        raise BundleError(f"predictions file missing ({path}): rerun the fixture job")
    if archive.file_sha256(path) != record["predictions_file_sha256"]:
        raise BundleError(f"predictions file {path} does not match its record's sha256: rerun the fixture job")
    preds = np.load(path, allow_pickle=False)
    if preds.dtype != np.int64 or preds.ndim != 1:
        raise BundleError(f"predictions in {path} are {preds.dtype} {preds.shape}, expected int64 (M,)")
    return preds


class FreshProcessRunner:
    """Qualify runner: each draw in its own fixture process at ``:16:8`` through an engine.

    Args:
        engine: runs the fixture job.
        workdir: folder for the per-draw input npz, config and fixture record (e.g.
            ``run_dir/.work/qualify``; not part of the archive).
        config: learner config (default: the frozen config).
        workspace: ``CUBLAS_WORKSPACE_CONFIG`` of every draw (default ``:16:8``).
        device: ``cuda`` (protocol) or ``cpu`` (diagnostic).
        on_line: receives the fixture's output lines.
        boards: boards to place the draws on (draw i on board i mod B; ``bundle.boards``);
            empty: the engine's default device.
        learner: the fixture's ``--learner`` (``rev88``, the frozen one, or ``rev88-fused``).
    """

    def __init__(self, engine: Engine, workdir: Path, *, config: Mapping[str, Any] | None = None,
                 workspace: str = PREFERRED_WORKSPACE, device: str = "cuda",
                 on_line: Callable[[str], None] | None = None, boards: Sequence[Any] = (),
                 learner: str = "rev88") -> None:
        self.boards = list(boards)
        self.learner = learner
        self.engine = engine
        self.workdir = Path(workdir).resolve()
        self.config = dict(config) if config is not None else None
        self.workspace = workspace
        self.device = device
        self.on_line = on_line

    def _config(self) -> dict[str, Any]:
        if self.config is None:
            from bundle.learner import FROZEN_CONFIG  # noqa: PLC0415  (learner imports torch)

            self.config = dict(FROZEN_CONFIG)
        return self.config

    def __call__(self, draw_index: int, inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, dict, dict]:
        """Run draw *draw_index* in a fresh fixture process.

        Returns:
            (predictions int64 (M,), the fixture's final metadata, ``{"fixture": {...}}`` with the
            workspace, memory block, named-storage totals, timing, hardware, software,
            execution and the record's sha256).

        Raises:
            BundleError: the fixture job failed.
        """
        folder = self.workdir / f"draw-{draw_index:02d}"
        npz, cfg = write_fixture_inputs(folder, inputs, self._config())
        output = folder / f"{workspace_stem(self.workspace)}.json.gz"
        spec = fixture_job(f"qualify/draw-{draw_index:02d}", engine=self.engine, npz=npz, config=cfg,
                           output=output, workspace=self.workspace, device=self.device,
                           extra_args=() if self.learner == "rev88" else ("--learner", self.learner))
        if self.boards:
            from bundle.boards import placement_env  # noqa: PLC0415

            board = self.boards[draw_index % len(self.boards)]
            spec = dataclasses.replace(spec, env={**spec.env, **placement_env(board)})
        record = run_fixture_job(self.engine, spec, output, self.on_line)
        predictions = load_predictions(output, record)
        inventory = record.get("buffer_inventory") or {}
        extra = {"fixture": {
            "fresh_process": True,
            "cublas_workspace_config": record["cublas_workspace_config"],
            "environment_was_set_externally": record["environment_was_set_externally"],
            "input_archive_sha256": record["input_archive_sha256"],
            "config_file_sha256": record["config_file_sha256"],
            "source_sha256": record["source_sha256"],
            "memory": record["memory"],
            "unique_named_storage_bytes": inventory.get("unique_named_storage_bytes"),
            "allocated_bytes_without_named_storage_reference":
                inventory.get("allocated_bytes_without_named_storage_reference"),
            "cache_reference": record["cache_reference"],
            "timing": record["timing"],
            "hardware": record["hardware"],
            "software": record["software"],
            "execution": record["execution"],
            "predictions_file_sha256": record["predictions_file_sha256"],
            "record_sha256": archive.file_sha256(output),
            "same_process_reference_hashes_matched": record["same_process_reference_hashes_matched"],
            "placement": record.get("placement"),
            "timeline": record.get("timeline"),
            **({"learner": record["learner"]} if "learner" in record else {}),
        }}
        return predictions, record["metadata"], extra
