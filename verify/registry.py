"""The ordered table of checks and the runner.

Integrity runs first; every other family runs only when integrity passed (so no
evaluation label is read before every hash matched). Each family is a function of the
verified files returning verdicts; an unexpected exception inside one becomes a single
FAIL line (``<family>.error``) and the remaining families still run (as MLPerf's
``check_with_logging``).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from protocol.errors import BundleError
from verify.host import HostReferenceError, require_reference_data
from verify.integrity import MANIFEST_NAME, ArchiveFiles, verify_run_archive
from verify.original_layout import is_original_archive, verify_original_archive
from verify.result import CheckResult, Status, VerifyReport, failed, unavailable

Family = Callable[[ArchiveFiles], list[CheckResult]]


def original_families() -> tuple[tuple[str, Family], ...]:
    """Checks of the original archive, in protocol order."""
    from verify.checks import original as o
    from verify.checks import original_cache as c
    from verify.checks import original_fields

    return (
        ("original.protocol", o.check_protocol),
        ("original.manifests", o.check_manifests),
        ("original.results", o.check_results),
        ("original.selection", o.check_selection),
        ("original.accuracy", o.check_accuracy),
        ("original.energy", o.check_energy),
        ("original.submission", o.check_submission),
        ("original.cache.records", c.check_fixture_records),
        ("original.cache.summary", c.check_summary),
        ("original.cache.submission", c.check_cache_submission),
        ("original.cache.consistency", c.check_peaks_match_runs),
        ("original.fields", original_fields.check_original_fields),
    )


def run_families() -> tuple[tuple[str, Family], ...]:
    """Checks of one of our run archives (families skip phases the archive lacks)."""
    from verify.checks import (
        run,
        run_compare,
        run_consistency,
        run_energy,
        run_fields,
        run_nvml,
        run_profile,
        run_qualify,
        run_timing,
    )

    return (
        ("run.fixtures", run.check_fixtures),
        ("run.qualify", run_qualify.check_qualify),
        ("run.compare_validate", run_compare.check_compare_validate),
        ("run.energy", run_energy.check_energy_phase),
        ("run.consistency", run_consistency.check_consistency),
        ("run.profile", run_profile.check_profile_phase),
        ("run.nvml", run_nvml.check_nvml_logs),
        ("run.fields", run_fields.check_run_fields),
        ("run.timing", run_timing.check_reproduce_timing),
        ("run.placement", run_timing.check_placement),
        ("run.resumed", run_timing.check_resumed_lists),
    )


def not_evaluated_reason(files: ArchiveFiles) -> str:
    """Why no check family reads an archive that failed integrity, naming its integrity FAILs' checks
    (``integrity.run_id`` for a renamed folder, ``integrity.sha256`` for a changed file, ...)."""
    bad = [r for r in files.results if r.status is Status.FAIL]
    ids = sorted({r.check_id for r in bad})
    first = bad[0] if bad else None
    what = (f"{len(bad)} integrity failure{'s' if len(bad) != 1 else ''} ({', '.join(ids)}), first "
            f"{first.check_id} {first.subject}" if first is not None else "integrity failed")
    return f"not evaluated: {what}; no record or label is read from an archive that fails integrity"


def run_checks(files: ArchiveFiles, families: Sequence[tuple[str, Family]], report: VerifyReport,
               on_stage: Callable[[str], None] | None = None) -> None:
    """Run each family; an exception becomes one FAIL line and the rest still run.

    Args:
        files: the archive's files after integrity.
        families: ``(name, check function)`` pairs, in order.
        report: receives the verdicts.
        on_stage: called with each family's name before it runs (progress display).
    """
    skipped = "" if files.ok else not_evaluated_reason(files)
    for name, family in families:
        if on_stage is not None:
            on_stage(name)
        if not files.ok:
            report.extend([unavailable(f"{name}", files.root.name, skipped)])
            continue
        try:
            report.extend(family(files))
        except HostReferenceError:
            raise  # the host's reference data, not the archive: one line for the whole run
        except BundleError as exc:
            named = getattr(exc, "file", None)  # a RecordError names its file
            subject = named if named and files.has(named) else files.root.name
            report.extend([failed(f"{name}.error", subject, str(exc))])
        except Exception as exc:  # noqa: BLE001 - a bug in one check must not hide the others
            line = str(exc).splitlines()[0] if str(exc) else ""
            report.extend([failed(f"{name}.error", files.root.name, f"{type(exc).__name__}: {line}")])


DIAGNOSTIC_VERDICTS = ("consistency.environment.cuda_device", "compare.config.device")
"""The FAILs that say a phase ran as a ``--device cpu`` diagnostic; they stay FAILs."""

FROZEN_VERDICTS = ("compare.frozen_reference.present", "compare.frozen_reference",
                   "compare.predictions_bit_equal_to_frozen_reference",
                   "validate.original_comparison.present", "validate.original_comparison")
"""The comparisons with the frozen reference: recomputed from predictions and hashes that a CPU run
has as well as a GPU run, so their FAILs stay FAILs on every device."""


def cpu_diagnostic_phases(files: ArchiveFiles) -> set[str]:
    """Phases other than qualification that ``environment.json.gz`` says ran without a CUDA device.

    Returns:
        Phase names (``compare``, ``validate``); empty when the record is missing or malformed
        (the environment checks report that).
    """
    try:
        executions = files.json("environment.json.gz").get("executions") or []
    except Exception:  # noqa: BLE001 - a malformed environment record is reported by its own checks
        return set()
    from verify.checks.run_consistency import diagnostic_phases  # noqa: PLC0415 - check modules load lazily, as in run_families

    return {p for ex in executions for p in diagnostic_phases(ex)}


def fold_cpu_diagnostics(files: ArchiveFiles, report: VerifyReport) -> None:
    """Turn the GPU-field FAILs of a ``--device cpu`` diagnostic phase into UNAVAILABLE.

    Such a phase already FAILs once, plainly (:data:`DIAGNOSTIC_VERDICTS`: "ran without a
    CUDA device … rerun on a GPU host"); its records have no CUDA memory, board or inventory
    figures, so every check of those fields would FAIL again with schema noise. Those become
    UNAVAILABLE naming the phase; integrity FAILs, the diagnostic verdicts and the comparisons with
    the frozen reference (:data:`FROZEN_VERDICTS`) are kept, so the archive still FAILs.
    """
    phases = cpu_diagnostic_phases(files)
    if not phases:
        return
    for i, r in enumerate(report.results):
        phase = r.subject.split("/", 1)[0] if "/" in r.subject else None
        if (r.status is Status.FAIL and phase in phases and r.check_id not in DIAGNOSTIC_VERDICTS + FROZEN_VERDICTS
                and not r.check_id.startswith("integrity.")):
            report.results[i] = CheckResult(r.check_id, r.subject, Status.UNAVAILABLE, r.recorded, r.recomputed,
                                            r.tolerance, f"not checked: {phase} ran as a --device cpu diagnostic "
                                            "(no CUDA memory, board or inventory figures to check)")


def stage_count(path: Path) -> int:
    """How many times :func:`verify_archive` calls ``on_stage`` for *path* (integrity + families)."""
    path = Path(path)
    return 1 + len(run_families() if os.path.lexists(path / MANIFEST_NAME) else original_families())


def verify_archive(path: Path, *, on_stage: Callable[[str], None] | None = None) -> VerifyReport:
    """Verify one archive folder (ours with ``manifest.json``, or the original layout).

    Args:
        path: the archive folder.
        on_stage: called with ``"integrity"`` and then each check family's name before it runs
            (:func:`stage_count` calls in all), for a progress display.

    Returns:
        The archive's verdicts and wall times per stage (seconds).

    Raises:
        BundleError: the folder does not exist or is neither layout.
        HostReferenceError: this host's frozen reference or raw MNIST files are missing or
            altered (:func:`verify.host.require_reference_data`); nothing is verified.
    """
    path = Path(path)
    if not path.is_dir():
        raise BundleError(f"archive folder not found ({path}): pass an evidence/<run> folder")
    t0 = time.perf_counter()
    if on_stage is not None:
        on_stage("integrity")
    # lexists: a manifest.json that is a link or a special file is this archive's (refused by
    # integrity, never opened), not a sign of another layout.
    if os.path.lexists(path / MANIFEST_NAME):
        kind, verify_files, families = "run", verify_run_archive, run_families()
    elif is_original_archive(path):
        kind, verify_files, families = "original", verify_original_archive, original_families()
    else:
        raise BundleError(f"not an evidence archive ({path}): it has no manifest.json and is not the original "
                          "layout; pass evidence/<run-id> or evidence/rev88-original")
    require_reference_data(kind)
    files = verify_files(path)
    report = VerifyReport(archive=str(path), kind=kind)
    report.extend(files.results)
    if kind == "run" and files.ok:
        from verify.ncu_reports import ReportReads

        files.background = ReportReads(files)  # the slow .ncu-rep reads overlap the other checks
    try:
        run_checks(files, families, report, on_stage)
        if kind == "run":
            fold_cpu_diagnostics(files, report)
    except BaseException:  # Ctrl-C (or a bug): stop the report reads now rather than wait for them
        if files.background is not None:
            files.background.close(now=True)
        raise
    finally:
        if files.background is not None:
            files.background.close()
    report.timings_s = {"total": time.perf_counter() - t0, "hashing": files.hashing_s}
    if files.background is not None:
        report.timings_s["ncu_report_read_in_workers"] = files.background.read_s
        report.timings_s["ncu_report_wait"] = files.background.wait_s
    return report


MAX_ARCHIVE_WORKERS = 4
"""Most worker processes :func:`verify_archives` starts (each holds one archive's verified content, up to
~600 MB for the largest shipped archive)."""


WORKERS_ENV = "REV88_VERIFY_WORKERS"
"""Environment variable: worker processes for :func:`verify_archives` (a positive integer; 1 verifies in-process)."""


def archive_workers(count: int) -> int:
    """Worker processes for verifying *count* archives: ``$REV88_VERIFY_WORKERS`` when set, else one per
    usable core and at most :data:`MAX_ARCHIVE_WORKERS`; never more than *count* (1: verify in this process).

    Raises:
        BundleError: ``$REV88_VERIFY_WORKERS`` is not a positive integer.
    """
    raw = os.environ.get(WORKERS_ENV, "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise BundleError(f"{WORKERS_ENV}={raw!r} is not a positive integer: set it to the number of worker "
                              "processes (1 verifies in this process) or unset it")
        wanted = int(raw)
    else:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        wanted = min(MAX_ARCHIVE_WORKERS, cores)
    return max(1, min(wanted, count))


def _stored_bytes(path: Path) -> int:
    """Total size in bytes of the regular files under *path* (links not followed; 0 when unreadable)."""
    total = 0
    for dirpath, _dirnames, filenames in os.walk(path, followlinks=False):
        for name in filenames:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def _warm_run_caches() -> None:
    """Before forking: the host's reference data and the per-draw hashes every run archive's checks read, so the
    workers inherit them. A failure is left to the worker whose archive needs the data (it raises in order)."""
    from verify.checks.draws import warm_draw_caches  # noqa: PLC0415 - check modules load lazily

    try:
        require_reference_data("run")
        warm_draw_caches()
    except BundleError:
        pass


def _worker_signals() -> None:
    """In an archive worker: Ctrl-C goes to the parent alone (no traceback per worker), SIGTERM ends it quietly."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _stop_workers(executor: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers now (Ctrl-C or SIGTERM in the parent)."""
    terminate = getattr(executor, "terminate_workers", None)  # public from Python 3.14
    if terminate is not None:
        terminate()
        return
    processes = list((getattr(executor, "_processes", None) or {}).values())  # shutdown forgets them
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()


def verify_archives(paths: Sequence[Path], *, workers: int | None = None,
                    on_progress: Callable[[str, int], None] | None = None) -> list[VerifyReport]:
    """Verify several archives, each in one of up to *workers* processes (verdicts as :func:`verify_archive`).

    Each archive is verified whole by one process, so its verdicts and their order are those of
    :func:`verify_archive`; archives start largest first (stored bytes), so the longest one does
    not start last. With one worker (one archive, or one core) everything runs in this process.
    Workers are forked where the platform can (they inherit the imported checks), else spawned;
    Ctrl-C reaches this process alone, which stops the workers.

    Args:
        paths: archive folders.
        workers: worker processes (default :func:`archive_workers`).
        on_progress: called with a stage description and the number of stages it completes
            (:func:`stage_count` in all per archive), for a progress display.

    Returns:
        One report per path, in the order of *paths*.

    Raises:
        BundleError, HostReferenceError: as :func:`verify_archive`, for the first path (in the
            order given) whose verification raised.
    """
    paths = [Path(p) for p in paths]
    n = archive_workers(len(paths)) if workers is None else max(1, min(workers, len(paths)))
    if n <= 1:
        reports = []
        for path in paths:
            def on_stage(stage: str, path: Path = path) -> None:
                if on_progress is not None:
                    on_progress(f"{path}: {stage}", 1)

            reports.append(verify_archive(path, on_stage=on_stage))
        return reports
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    if method == "fork" and any(os.path.lexists(p / MANIFEST_NAME) for p in paths):
        _warm_run_caches()
    for stream in (sys.stdout, sys.stderr):  # a forked worker flushes what it inherited: flush it here first
        stream.flush()
    executor = ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context(method),
                                   initializer=_worker_signals)
    try:
        futures: dict[Future, int] = {}
        for i in sorted(range(len(paths)), key=lambda k: -_stored_bytes(paths[k])):
            futures[executor.submit(verify_archive, paths[i])] = i
        outcomes: list[VerifyReport | BaseException | None] = [None] * len(paths)
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                i = futures[future]
                exc = future.exception()
                outcomes[i] = exc if exc is not None else future.result()
                if on_progress is not None:
                    on_progress(f"{paths[i]}: verified", stage_count(paths[i]) if paths[i].is_dir() else 1)
    except BaseException:
        _stop_workers(executor)
        raise
    executor.shutdown(wait=True)
    for path, outcome in zip(paths, outcomes, strict=True):
        if isinstance(outcome, BrokenProcessPool):
            raise BundleError(f"the worker process verifying {path} died ({outcome}): out of memory or killed? "
                              f"verify that archive alone (rev88 verify {path})")
        if isinstance(outcome, BaseException):
            raise outcome
    return [o for o in outcomes if isinstance(o, VerifyReport)]


def discover_archives(evidence_dir: Path) -> list[Path]:
    """Every subfolder of ``evidence/`` (hidden ones aside): each is an archive.

    A subfolder without ``manifest.json`` that is not the original's layout is still returned,
    so that its verification FAILs (a run archive whose manifest went missing must never be
    skipped); so is a symlink, which integrity refuses.
    """
    if not evidence_dir.is_dir():
        raise BundleError(f"evidence folder not found ({evidence_dir}): run from the repository root or pass archives")
    found = [p for p in sorted(evidence_dir.iterdir()) if not p.name.startswith(".")
             and (p.is_dir() or p.is_symlink())]
    if not found:
        raise BundleError(f"no archives under {evidence_dir}: pass an archive folder")
    return found
