"""The ``profile`` phase: Nsight Compute counters of the fixture, per workspace config and scope.

Four profiles, ``{:4096:8, :16:8} × {task, training}``, each repeated R ≥ 3 times in an
interleaved order (repeat 0 of all four, then repeat 1, …) so that drift over the phase
is spread over every profile rather than piled onto one. Each run is one job:
``ncu --replay-mode app-range … {python} -m bundle.fixture --mode profile`` with
``CUBLAS_WORKSPACE_CONFIG`` set only in the job's environment (spec 6.1, 6.2). This
module builds the jobs and stores what they produced; parsing and arithmetic live in
:mod:`bundle.profile`.

Files in ``RUN_DIR/profile/``:

* ``capabilities.json.gz``: ``ncu --version`` and the metric query (rc, hashes), the pinned
  version and whether this ncu is it; ``metric-query.stdout.txt.gz`` / ``.stderr.txt.gz``.
* per run ``<stem>-<scope>-rNN`` (stem ``workspace-4096-8``): ``.csv.gz`` (the quoted lines
  ncu printed), ``.ncu-output.txt.gz`` (all of ncu's stdout and stderr), ``.ncu-rep.gz``,
  ``.fixture.json.gz`` (the fixture's record), ``.predictions.npy``, and ``.json.gz``
  (the run's record: metric rows, device attributes, passes, normalised figures, the
  ``.ncu-rep`` cross-check, file hashes).
* ``profiles.json.gz``: per profile the repeats' figures, mean and sample SD.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bundle import archive
from bundle import profile as counters
from bundle.jobs import WORKSPACE_ENV, Engine, JobResult, JobSpec
from bundle.phases.fixture_runner import check_resumed_launch, engine_env, store_kernel_source
from protocol.energy_design import learner_of
from protocol.errors import BundleError
from protocol.profile_texts import GPU_LOCK_TEXT, VERSION_NOTE, lock_scope_of  # noqa: F401  (re-exported)

PHASE = "profile"
WORKSPACE_CONFIGS = (":4096:8", ":16:8")
SCOPES = ("task", "training")
MIN_REPEATS = 3
# How the ncu runs of one board share it (run_profile's lock_scope and overlap). "process": each
# fixture process holds the board's GPU lock from before CUDA initialisation until it exits, and
# two runs are started at once (the second one's ncu, interpreter and imports overlap, CPU only).
# "range": the lock is shared during CUDA initialisation and preparation and exclusive from the
# warm-ups on; all twelve runs start at once. Measured on one H200 (GPU-f6500d35, 2026-12-01,
# docs/results/workspace-study.md) the range way's :16:8 task repeats read 0.1-0.8 % more
# L2 request bytes per task than the serialised way's on the same board, outside the serialised
# repeats' 0.02 % spread (0.0-1.4 % over all four profiles against another board's serialised
# run): it is faster but not the protocol's measurement, so the default is "process".
LOCK_SCOPE_DEFAULT = "process"
DEFAULT_OVERLAP = {"process": 2, "range": 12}  # ncu runs started at once per board, per lock scope


def resolve_overlap(lock_scope: str, overlap: int | None) -> int:
    """The ncu runs to start at once per board for *lock_scope* (``--overlap``, default :data:`DEFAULT_OVERLAP`).

    Raises:
        BundleError: an unknown lock scope, or *overlap* below 1.
    """
    if lock_scope not in DEFAULT_OVERLAP:
        raise BundleError(f"--lock-scope must be one of {', '.join(DEFAULT_OVERLAP)} (got --lock-scope {lock_scope!r})")
    overlap = DEFAULT_OVERLAP[lock_scope] if overlap is None else overlap
    if overlap < 1:
        raise BundleError(f"--overlap {overlap}: give 1 or more ncu runs at once")
    return overlap


DRAW_INDEX = 0  #: the original profiled draw 0
PROFILE_TIMEOUT_S = 1800.0
#: On an interrupt, how long the phase waits for the background stores of runs that had finished
#: (cross-check, level-9 gzip and record of a kept .ncu-rep: ~50 s for a 116 MB report on the 2-core
#: AMD EPYC) before it re-raises; a store that lands keeps its run for the resume. A SIGKILL
#: meanwhile loses only that run (its temporary file is swept by RunArchive.phase).
STORE_GRACE_S = 180.0
QUERY_TIMEOUT_S = 600.0
@dataclass(frozen=True)
class ProfileRun:
    """One ``ncu`` run: a workspace config, a scope and a repeat index."""

    workspace_config: str
    scope: str
    repeat_index: int

    @property
    def profile_key(self) -> str:
        """``workspace-16-8-task``: the profile this run is a repeat of."""
        return f"workspace-{self.workspace_config.strip(':').replace(':', '-')}-{self.scope}"

    @property
    def name(self) -> str:
        """``workspace-16-8-task-r00``: stem of the run's files."""
        return f"{self.profile_key}-r{self.repeat_index:02d}"

    @property
    def sequences(self) -> int:
        """S: sequences inside the range (16 tasks, or 1 training sequence)."""
        return counters.SEQUENCES_IN_RANGE[self.scope]


def plan_runs(repeats: int) -> list[ProfileRun]:
    """All runs in execution order: for each repeat, every workspace config and scope.

    Raises:
        BundleError: fewer than :data:`MIN_REPEATS` repeats.
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < MIN_REPEATS:
        raise BundleError(f"--repeats must be an integer >= {MIN_REPEATS} (got {repeats!r}): a sample SD needs it")
    return [ProfileRun(ws, scope, r) for r in range(repeats) for ws in WORKSPACE_CONFIGS for scope in SCOPES]


def _not_stored(path: Path, reason: str) -> dict[str, Any]:
    """Describe a file that was produced and checked but deliberately not stored."""
    data = path.read_bytes()
    return {"path": None, "sha256": None, "content_sha256": hashlib.sha256(data).hexdigest(),
            "content_size_bytes": len(data), "stored": False, "reason": reason}


def _stored(stage: archive.PhaseStage, rel: str, data: bytes, *, gz: bool = True) -> dict[str, Any]:
    """Store *data* (gzipped when *gz*, else as given) and describe it as the manifest does.

    ``content_*`` are the sha256 and size of the decompressed bytes for ``.gz`` files
    (as the original's ``*_uncompressed_sha256``), ``None`` otherwise.
    """
    path = archive.write_bytes_gz(stage / rel, data) if gz else archive.atomic_write_bytes(stage / rel, data)
    content = data if gz else (gzip.decompress(data) if rel.endswith(".gz") else None)
    return {"path": rel, "sha256": archive.file_sha256(path),
            "content_sha256": None if content is None else hashlib.sha256(content).hexdigest(),
            "content_size_bytes": None if content is None else len(content)}


def write_fixture_inputs(workdir: Path, raw_dir: Path | None = None) -> tuple[Path, Path]:
    """Write draw 0's learner inputs (``input.npz``) and the frozen ``config.json`` into *workdir*.

    Uses :func:`bundle.phases.fixture_runner.write_fixture_inputs` (reproducible npz, as compare).

    Returns:
        ``(input_npz, config_json)``, absolute.

    Raises:
        BundleError: missing or altered raw MNIST files.
    """
    from bundle.learner import FROZEN_CONFIG  # noqa: PLC0415  (imports torch; only here)
    from bundle.phases.fixture_runner import write_fixture_inputs as write_inputs  # noqa: PLC0415
    from protocol.data import load_draw  # noqa: PLC0415

    return write_inputs(workdir, load_draw(DRAW_INDEX, raw_dir).learner_inputs(), FROZEN_CONFIG)


def _run_checked(engine: Engine, spec: JobSpec, where: str,
                 on_line: Callable[[str], None] | None) -> tuple[JobResult, str]:
    result = engine.run(spec, on_line=on_line)
    output = result.stdout + ("" if result.stdout.endswith("\n") or not result.stdout else "\n") + result.stderr
    if result.exit_code == 127 and counters.PERMISSION_MARKER not in output:
        raise BundleError(f"ncu could not be started ({where}: {result.last_error_line()}): pass --ncu PATH")
    counters.check_ncu_exit(where, result.exit_code, output)
    return result, output


def record_capabilities(stage: archive.PhaseStage, *, engine: Engine, ncu_path: str, workdir: Path,
                        on_line: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run ``ncu --version`` and the metric query (spec 6.1) and keep their output.

    Raises:
        BundleError: either fails, counters are not permitted, or a metric is unknown to the GPU.
    """
    version_spec = JobSpec(name="profile/ncu-version", argv=counters.version_argv(ncu_path), workdir=workdir,
                           timeout_s=QUERY_TIMEOUT_S, gpu=False)
    version, _ = _run_checked(engine, version_spec, "ncu --version", on_line)
    # The query prints ~97 MB on the H200 (docs/device-facts.md), more than a JobResult keeps,
    # so the shell sends it to files in the job's folder.
    out_path, err_path = workdir / "metric-query.stdout.txt", workdir / "metric-query.stderr.txt"
    query_argv = counters.query_argv(ncu_path)
    out_path.unlink(missing_ok=True)
    err_path.unlink(missing_ok=True)
    query_spec = JobSpec(name="profile/ncu-query-metrics",
                         argv=("sh", "-c", f'exec "$0" "$@" > "{out_path}" 2> "{err_path}"', *query_argv),
                         workdir=workdir, timeout_s=QUERY_TIMEOUT_S, gpu=True, cap_sys_admin=True)
    query = engine.run(query_spec, on_line=on_line)
    query_out = (out_path.read_bytes() if out_path.is_file() else b"") + query.stdout.encode()
    query_err = (err_path.read_bytes() if err_path.is_file() else b"") + query.stderr.encode()
    query_files = {
        "stdout": _stored(stage, "metric-query.stdout.txt.gz", query_out),
        "stderr": _stored(stage, "metric-query.stderr.txt.gz", query_err),
    }
    query_text = (query_out + query_err).decode("utf-8", "replace")
    counters.check_metric_query(query.exit_code, query_text)
    found = counters.parse_ncu_version(version.stdout + version.stderr)
    record = {
        "schema_version": archive.SCHEMA_VERSION,
        "ncu_path": ncu_path,
        "ncu_version_text": version.stdout,
        "ncu_version": found,
        "pinned_ncu_version": counters.PINNED_NCU_VERSION,
        "ncu_version_is_pinned": found == counters.PINNED_NCU_VERSION,
        "ncu_version_note": VERSION_NOTE.format(pinned=counters.PINNED_NCU_VERSION, found=found or "an unknown version"),
        "metric_query": {"argv": list(query_argv), "returncode": query.exit_code, "files": query_files,
                         "raw_query_sha256": hashlib.sha256(query_out + query_err).hexdigest()},
        "metrics": list(counters.NCU_METRICS),
        "profile_flags": list(counters.NCU_PROFILE_FLAGS),
        "recorded_at_utc": archive.utc_now(),
    }
    archive.write_json_gz(stage / "capabilities.json.gz", record)
    return record


def _check_fixture_record(run: ProfileRun, fixture: dict[str, Any], rows: counters.CounterRows,
                          learner: str = counters.DEFAULT_LEARNER) -> dict[str, Any]:
    """Cross-check the fixture's own record with the counters; returns the facts kept."""
    found = learner_of(fixture)
    if found != learner:
        raise BundleError(f"fixture record of {run.name} names learner {found!r}, expected {learner!r}: the fixture "
                          "did not run the learner asked for")
    profile = fixture.get("profile") or {}
    in_range = profile.get("fresh_training_sequences_in_range")
    if profile.get("scope") != run.scope or in_range != run.sequences:
        raise BundleError(
            f"fixture record of {run.name} says scope {profile.get('scope')!r} with {in_range!r} sequences in "
            f"range, expected {run.scope!r} with {run.sequences}: the fixture did not profile what was asked"
        )
    hardware = fixture.get("hardware") or {}
    device_l2 = hardware.get("l2_cache_bytes")
    ncu_l2 = rows.l2_cache_size_bytes
    if device_l2 is not None and ncu_l2 is not None and int(device_l2) != ncu_l2:
        raise BundleError(
            f"ncu reports an L2 of {ncu_l2} B but the fixture's device reports {device_l2} B ({run.name}): "
            "ncu profiled another device; set CUDA_VISIBLE_DEVICES"
        )
    if rows.display_name is not None and fixture.get("gpu") is not None and rows.display_name != fixture["gpu"]:
        raise BundleError(
            f"ncu profiled {rows.display_name!r} but the fixture ran on {fixture['gpu']!r} ({run.name}): "
            "ncu profiled another device; set CUDA_VISIBLE_DEVICES"
        )
    return {
        "workspace_config": fixture.get("cublas_workspace_config"),
        "gpu": fixture.get("gpu"),
        "l2_cache_bytes": device_l2,
        "profile": profile,
        "same_process_reference_hashes_matched": fixture.get("same_process_reference_hashes_matched"),
        "metadata_state_hashes": {k: (fixture.get("metadata") or {}).get(k)
                                  for k in ("final_parameter_sha256", "state_vector_sha256", "predictions_sha256")},
        "placement": fixture.get("placement"),
        "timeline": fixture.get("timeline"),
        **({"learner": fixture["learner"]} if "learner" in fixture else {}),
    }


def profile_once(run: ProfileRun, stage: archive.PhaseStage, *, engine: Engine, ncu_path: str, workdir: Path,
                 inputs: tuple[Path, Path], on_line: Callable[[str], None] | None = None,
                 keep_report: bool = True, placement: Mapping[str, str] | None = None,
                 learner: str = counters.DEFAULT_LEARNER,
                 defer: Callable[[Callable[[], dict[str, Any]]], Any] | None = None) -> Any:
    """Run one ``ncu`` profile of the fixture, check it, store its files and its record.

    With ``keep_report=False`` the ``.ncu-rep`` is still cross-checked against the CSV, and its
    sha256 and size are recorded, but the file itself is not stored (a task-scope report is tens
    of MB; keeping one report per profile keeps an archive well under 50 MB). The verifier
    reports such a file as unavailable, never as passed.

    The run's record (``<name>.json.gz``) is written last, so its presence means the run is
    complete (a resumed phase skips it). *placement* (``bundle.boards.placement_env``) puts the
    job on a board and/or behind the board's GPU lock; the record keeps the fixture's placement.

    *defer*: when given, the last step (cross-check the ``.ncu-rep``, gzip and store the files,
    write the record, remove the uncompressed report) is handed to ``defer(finish)`` and its return value (a future of the
    record, in :func:`run_profile`) is returned instead of the record. Level-9 gzip of a
    116 MB task-scope ``.ncu-rep`` takes ~50 s of one CPU core (measured on the 2-core EPYC CI
    machine: 49.6 s, against 3.3 s at level 6), CPU work that need not hold up the next ncu run.
    Without *defer* the record is returned.

    Raises:
        BundleError: ncu failure (missing permission, non-zero status), not one range,
            a CSV/report disagreement, or a fixture record that does not match the request.
    """
    export_base = workdir / run.name
    report_path = workdir / f"{run.name}.ncu-rep"
    fixture_out = workdir / f"{run.name}.fixture.json.gz"
    predictions = workdir / f"{run.name}.fixture.predictions.npy"
    for stale in (report_path, fixture_out, predictions):
        stale.unlink(missing_ok=True)
    target = counters.fixture_argv(str(inputs[0]), str(inputs[1]), str(fixture_out), run.scope, learner=learner)
    spec = JobSpec(name=f"{PHASE}/{run.name}", argv=counters.profile_argv(ncu_path, str(export_base), target),
                   env={WORKSPACE_ENV: run.workspace_config, **engine_env(engine), **(placement or {})},
                   workdir=workdir, timeout_s=PROFILE_TIMEOUT_S,
                   gpu=True, cap_sys_admin=True)
    result = engine.run(spec, on_line=on_line)
    output = result.stdout + "\n" + result.stderr
    archive.atomic_write_bytes(workdir / f"{run.name}.ncu-output.txt", output.encode())
    counters.check_ncu_exit(f"profile {run.name}; output kept in {workdir / (run.name + '.ncu-output.txt')}",
                       result.exit_code, output)
    rows = counters.parse_raw_csv(output)
    if not report_path.is_file():
        raise BundleError(f"ncu wrote no report {report_path} ({run.name}): check --export and the folder")
    fixture = archive.read_json_gz(fixture_out)
    fixture_facts = _check_fixture_record(run, fixture, rows, learner)
    figures = counters.normalise_counters(rows, run.sequences, run.scope)
    finished_at = archive.utc_now()

    def finish() -> dict[str, Any]:
        return _store_run(run, stage, spec, result, rows, fixture_out, predictions, report_path, output,
                          fixture_facts, figures, keep_report, finished_at)
    return finish() if defer is None else defer(finish)


def _store_run(run: ProfileRun, stage: archive.PhaseStage, spec: JobSpec, result: Any, rows: counters.CounterRows,
               fixture_out: Path, predictions: Path, report_path: Path, output: str, fixture_facts: dict[str, Any],
               figures: dict[str, Any], keep_report: bool, finished_at: str) -> dict[str, Any]:
    """Cross-check the ``.ncu-rep`` against the CSV, store the run's files, write its record last.

    :func:`profile_once`'s final step (CPU only). Raises BundleError as
    :func:`bundle.profile.cross_check_report` and the archive writers do.
    """
    cross_check = counters.cross_check_report(rows, report_path)
    csv_text = "\n".join(counters.csv_lines(output)) + "\n"
    files = {
        "csv": _stored(stage, f"{run.name}.csv.gz", csv_text.encode()),
        "ncu_output": _stored(stage, f"{run.name}.ncu-output.txt.gz", output.encode()),
        "ncu_report": (_stored(stage, f"{run.name}.ncu-rep.gz", report_path.read_bytes()) if keep_report
                       else _not_stored(report_path, "not stored to keep the archive lean: one report per "
                                        "profile is kept (repeat 0); " + (
                                            "this one was cross-checked at run time"
                                            if cross_check.get("status") == "passed" else
                                            "this one was not cross-checked either (ncu_report "
                                            f"{cross_check.get('status', 'unknown')} at run time)"))),
        "fixture_record": _stored(stage, f"{run.name}.fixture.json.gz", fixture_out.read_bytes(), gz=False),
    }
    if predictions.is_file():
        files["predictions"] = _stored(stage, f"{run.name}.predictions.npy", predictions.read_bytes(), gz=False)
    record = {
        "schema_version": archive.SCHEMA_VERSION,
        "name": run.name,
        "profile": run.profile_key,
        "workspace_config": run.workspace_config,
        "scope": run.scope,
        "repeat_index": run.repeat_index,
        "command": list(spec.argv),
        "env": dict(spec.env),
        "returncode": result.exit_code,
        "duration_s": result.duration_s,
        "finished_at_utc": finished_at,
        "range_id": rows.range_id,
        "range_name": rows.range_name,
        "metric_rows": rows.metric_rows(),
        "profile_device_attributes": rows.device_attributes,
        "profile_device_attribute_units": rows.attribute_units,
        "l2_cache_size_bytes": rows.l2_cache_size_bytes,
        "gpu_time_duration_ns": rows.gpu_time_duration_ns,
        "pass_counts": counters.replay_pass_counts(rows, output),
        "l2_sector_hit_rate_above_100_percent": rows.metrics[counters.L2_HIT_RATE].value
        > counters.HIT_RATE_MAX_PERCENT,
        "ncu_report_cross_check": cross_check,
        "fixture": fixture_facts,
        "files": files,
        **figures,
    }
    archive.write_json_gz(stage / f"{run.name}.json.gz", record)
    report_path.unlink(missing_ok=True)
    return record


def board_of(record: Mapping[str, Any]) -> str | None:
    """The board UUID a profile run's fixture found (its ``fixture.placement``), ``None`` if unrecorded."""
    return (((record.get("fixture") or {}).get("placement")) or {}).get("board_uuid")


def summarise_profiles(runs: list[ProfileRun], records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per profile: the repeats' normalised figures, their mean and sample SD (numpy, ddof 1)."""
    out: dict[str, Any] = {}
    for run in runs:
        entry = out.setdefault(run.profile_key, {
            "workspace_config": run.workspace_config, "scope": run.scope,
            "range_training_sequences": run.sequences, "counter_unit": counters.COUNTER_UNITS[run.scope],
            "runs": [], "repeats": []})
        rec = records[run.name]
        entry["runs"].append(run.name)
        entry.setdefault("board_of_repeat", []).append(board_of(rec))
        entry["repeats"].append({k: rec[k] for k in counters.normalise_counters(rec["metric_rows"], run.sequences)})
    for entry in out.values():
        entry.update(counters.summarise_repeats(entry["repeats"]))
    return out


def _with_shared_locks(paths: Sequence[Path], call: Callable[[], Any]) -> Any:
    """``call()`` while holding every lock file in *paths* shared (``fcntl.flock``; created if absent).

    Raises:
        BundleError: a lock file cannot be opened or locked; whatever *call* raises.
    """
    import fcntl  # noqa: PLC0415  (POSIX)

    handles = []
    try:
        for path in paths:
            handle = open(path, "a+b")  # noqa: SIM115  (closed below)
            handles.append(handle)
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
        return call()
    except OSError as exc:
        raise BundleError(f"cannot take the GPU lock {exc.filename or paths} shared ({exc.strerror}): check that "
                          "the run folder is writable") from None
    finally:
        for handle in handles:
            handle.close()


def _on_daemon_thread(name: str, call: Callable[[], Any]) -> Future:
    """Run *call* on a daemon thread named *name*; its result or exception lands in the returned future
    (daemon: a failed or interrupted phase does not wait for it)."""
    future: Future = Future()

    def target() -> None:
        try:
            future.set_result(call())
        except BaseException as exc:  # noqa: BLE001  (handed to the phase's thread)
            future.set_exception(exc)
    threading.Thread(target=target, name=name, daemon=True).start()
    return future


def run_profile(run_dir: str | Path, *, engine: Engine, repeats: int = MIN_REPEATS, ncu: str | None = None,
                raw_dir: str | Path | None = None, force: bool = False, mnist_dir: Path | None = None,
                on_run: Callable[[ProfileRun, int, int], None] | None = None,
                on_line: Callable[[str], None] | None = None, keep_reports: str = "first",
                boards: Sequence[Any] = (), overlap: int | None = None, lock_scope: str = LOCK_SCOPE_DEFAULT,
                learner: str = counters.DEFAULT_LEARNER) -> dict[str, Any]:
    """Profile the fixture under ncu: four profiles × *repeats*, interleaved (spec 6, 9.5).

    Args:
        run_dir: the run archive folder (``profile/`` is added to it).
        engine: runs each job (native subprocess or one container per job).
        repeats: R ≥ 3 repeats of each profile.
        ncu: the ncu executable (``--ncu``); natively found by :func:`bundle.profile.find_ncu`,
            in a container taken as given (default ``ncu`` on the image's PATH).
        raw_dir: scratch folder for inputs and ncu's uncompressed outputs (kept when given;
            default ``RUN_DIR/.work/profile``, removed after the phase completes).
        force: replace a completed ``profile`` phase.
        mnist_dir: raw MNIST folder (default: the data module's).
        on_run: called ``(run, index, total)`` before each run (progress display).
        on_line: receives each output line of each job.
        keep_reports: ``"first"`` stores the ``.ncu-rep`` of repeat 0 of each profile (every
            report is still cross-checked and hashed), ``"all"`` stores every report.
        boards: boards to spread the runs over (run k on board k mod B; ``bundle.boards``);
            empty: the engine's default device, as one board.
        overlap: ncu runs started at once per board (>= 1; default :data:`DEFAULT_OVERLAP` of
            the *lock_scope*).
        lock_scope: how a run's fixture processes hold the board's GPU lock
            (``bundle.fixture.acquire_gpu_lock``). ``process`` (default): exclusively from before
            CUDA initialisation until exit, so only CPU work (ncu, interpreter, imports) of the
            other started runs overlaps a process. ``range``: shared during CUDA initialisation,
            preparation and first invocation (those of several runs overlap), exclusive from the
            warm-ups before the range until exit, so no other job's GPU work meets a range; faster,
            but measured to read more L2 sectors than the serialised way (see
            :data:`LOCK_SCOPE_DEFAULT`). Runs take the lock in the order they get it (recorded per
            run); the interleaved plan only decides which runs start first.
        learner: the fixture's ``--learner``: ``rev88`` (the frozen one) or ``rev88-fused``;
            the summary names it (with the kernel's sha256 from the runs' records).

    Returns:
        The ``profiles.json.gz`` record.

    Raises:
        BundleError: bad repeats, ncu not found or failing, or any check of a run.
    """
    if keep_reports not in ("first", "all"):
        raise BundleError(f"--keep-reports must be 'first' or 'all' (got {keep_reports!r})")
    overlap = resolve_overlap(lock_scope, overlap)
    runs = plan_runs(repeats)
    started = time.monotonic()
    run_archive = archive.RunArchive(run_dir)
    native = getattr(engine, "kind", "native") == "native"
    ncu_path = counters.find_ncu(ncu) if native else (ncu or "ncu")
    workdir = Path(raw_dir) if raw_dir is not None else run_archive.run_dir / archive.WORK_DIR / PHASE
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    with run_archive.phase(PHASE, force=force) as stage:
        inputs = write_fixture_inputs(workdir, mnist_dir)

        from bundle.boards import placement_env  # noqa: PLC0415
        from bundle.phases.fixture_runner import gpu_lock_path, run_overlapped  # noqa: PLC0415

        places = list(boards) or [None]
        locks = [gpu_lock_path(workdir, board) for board in places]
        # The metric query (~16 s on the H200) runs while the first runs prepare, holding every
        # board's lock shared: no range runs while it does (a run already exclusive makes it wait).
        # A daemon thread, so that a failed run does not keep the process waiting for it; a failed
        # query stops the runs not yet started.
        query = _on_daemon_thread("ncu-query", lambda: _with_shared_locks(locks, lambda: record_capabilities(
            stage, engine=engine, ncu_path=ncu_path, workdir=workdir, on_line=on_line)))
        # A run that stores its .ncu-rep (tens of MB, level-9 gzip ~50 s of CPU) stores it and
        # writes its record on a thread of its own, so the next ncu run starts meanwhile; the
        # summary waits for every record, and a failed store stops the runs not yet started. Daemon
        # threads: an interrupt (Ctrl-C, SIGTERM) does not wait for them, so a run whose store was
        # still going has no record and is profiled again on resume (a killed write's temporary
        # file is swept when the phase completes).
        finishing: list[Future] = []

        def in_background(finish: Callable[[], dict[str, Any]]) -> Future:
            finishing.append(_on_daemon_thread("ncu-store", finish))
            return finishing[-1]

        records: dict[str, dict[str, Any]] = {}
        resumed: list[str] = []
        per_board: dict[int, list[Callable[[], Any]]] = {b: [] for b in range(len(places))}
        pending: list[ProfileRun] = []
        for index, run in enumerate(runs):
            if stage.has(f"{run.name}.json.gz"):
                records[run.name] = archive.read_json_gz(stage / f"{run.name}.json.gz")
                check_resumed_launch((records[run.name].get("fixture") or {}).get("learner"),
                                     f"{stage.path} run {run.name}")
                staged = learner_of(records[run.name].get("fixture") or {})
                if staged != learner:
                    raise BundleError(f"{stage.path} holds run {run.name} of learner {staged}, not {learner}: "
                                      f"resume with --learner {staged}, or start over with --force")
                staged_scope = lock_scope_of(records[run.name].get("fixture") or {}) or "process"
                if staged_scope != lock_scope:
                    raise BundleError(f"{stage.path} holds run {run.name} made with --lock-scope {staged_scope}, not "
                                      f"{lock_scope}: resume with --lock-scope {staged_scope}, or start over with --force")
                resumed.append(run.name)
                if on_run is not None:
                    on_run(run, index, len(runs))
                continue
            pending.append(run)
        for k, run in enumerate(pending):
            board = places[k % len(places)]
            env = placement_env(board, str(locks[k % len(places)]), lock_scope=lock_scope)

            def job(run: ProfileRun = run, env: dict[str, str] = env) -> tuple[str, dict[str, Any]]:
                if query.done() and query.exception() is not None:
                    raise query.exception()
                for stored in list(finishing):  # a failed background store stops the runs not yet started
                    if stored.done() and stored.exception() is not None:
                        raise stored.exception()
                if on_run is not None:
                    on_run(run, runs.index(run), len(runs))
                keep = keep_reports == "all" or run.repeat_index == 0
                return run.name, profile_once(run, stage, engine=engine, ncu_path=ncu_path, workdir=workdir,
                                              inputs=inputs, on_line=on_line, placement=env, keep_report=keep,
                                              learner=learner, defer=in_background if keep else None)
            per_board[k % len(places)].append(job)
        try:
            if len(places) == 1:
                done = run_overlapped(per_board[0], max(1, overlap))
            else:
                lanes = [lambda jobs=jobs: run_overlapped(jobs, max(1, overlap)) for jobs in per_board.values()]
                done = [item for lane in run_overlapped(lanes, len(lanes)) for item in lane]
        except Exception:
            for started in finishing:  # let finished runs' records land, so a resume keeps them
                started.exception()
            raise
        except BaseException:  # Ctrl-C / SIGTERM: the ncu runs are stopped; finished runs still being
            from concurrent.futures import wait  # noqa: PLC0415  (stored get STORE_GRACE_S s to land)

            wait(finishing, timeout=STORE_GRACE_S)
            raise
        failed = [started.exception() for started in finishing if started.exception() is not None]  # waits for all
        if failed:
            raise failed[0]
        records.update({name: (rec.result() if isinstance(rec, Future) else rec) for name, rec in done})
        capabilities = query.result()
        summary = {
            "schema_version": archive.SCHEMA_VERSION,
            "draw": DRAW_INDEX,
            "repeats": repeats,
            **({} if learner == counters.DEFAULT_LEARNER else
               {"learner": records[runs[0].name]["fixture"].get("learner")}),
            "order": [run.name for run in runs],
            "resumed_runs": resumed,
            "ncu_version": capabilities["ncu_version"],
            "pinned_ncu_version": capabilities["pinned_ncu_version"],
            "ncu_version_is_pinned": capabilities["ncu_version_is_pinned"],
            "ncu_version_note": capabilities["ncu_version_note"],
            "metrics": list(counters.NCU_METRICS),
            "l2_sector_bytes": counters.L2_SECTOR_BYTES,
            "device_attributes": records[runs[0].name]["profile_device_attributes"],
            "l2_cache_size_bytes": records[runs[0].name]["l2_cache_size_bytes"],
            "profiles": summarise_profiles(runs, records),
            "placement": {"boards": [b.record() if b is not None else None for b in places],
                          "ncu_runs_started_at_once_per_board": max(1, overlap),
                          "gpu_lock": GPU_LOCK_TEXT[lock_scope],
                          "gpu_lock_scope": lock_scope,
                          "board_of_run": {name: board_of(rec) for name, rec in records.items()}},
            "phase_wall_s": time.monotonic() - started,
            "phase_wall_s_covers": "this invocation of the phase (runs resumed from an earlier one are not re-timed)",
            "completed_at_utc": archive.utc_now(),
        }
        archive.write_json_gz(stage / "profiles.json.gz", summary)
        store_kernel_source(run_archive.run_dir, stage.path)   # the CUDA tool's source beside its records
    for run in runs:  # one entry per board (record_execution merges equal ones)
        fixture = archive.read_json_gz(run_archive.phase_dir(PHASE) / f"{run.name}.fixture.json.gz")
        if isinstance(fixture.get("execution"), dict):
            run_archive.record_execution(PHASE, fixture["execution"])
    if raw_dir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return summary
