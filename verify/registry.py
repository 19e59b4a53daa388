"""The ordered table of checks and the runner.

Integrity runs first; every other family runs only when integrity passed (so no
evaluation label is read before every hash matched). Each family is a function of the
verified files returning verdicts; an unexpected exception inside one becomes a single
FAIL line (``<family>.error``) and the remaining families still run (as MLPerf's
``check_with_logging``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bundle.errors import BundleError
from verify.integrity import MANIFEST_NAME, ArchiveFiles, verify_run_archive
from verify.original_layout import is_original_archive, verify_original_archive
from verify.result import CheckResult, VerifyReport, failed, unavailable

Family = Callable[[ArchiveFiles], list[CheckResult]]


def original_families() -> tuple[tuple[str, Family], ...]:
    """Checks of the original archive, in protocol order."""
    from verify.checks import original as o
    from verify.checks import original_cache as c

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
    )


def run_families() -> tuple[tuple[str, Family], ...]:
    """Checks of one of our run archives (families skip phases the archive lacks)."""
    from verify.checks import run, run_compare, run_consistency, run_energy, run_profile, run_qualify

    return (
        ("run.fixtures", run.check_fixtures),
        ("run.qualify", run_qualify.check_qualify),
        ("run.compare_validate", run_compare.check_compare_validate),
        ("run.energy", run_energy.check_energy_phase),
        ("run.consistency", run_consistency.check_consistency),
        ("run.profile", run_profile.check_profile_phase),
    )


def run_checks(files: ArchiveFiles, families: Sequence[tuple[str, Family]], report: VerifyReport) -> None:
    """Run each family; an exception becomes one FAIL line and the rest still run."""
    for name, family in families:
        if not files.ok:
            report.extend([unavailable(f"{name}", files.root.name, "not evaluated: integrity failed, no record "
                                       "or label is read from an archive whose hashes do not match")])
            continue
        try:
            report.extend(family(files))
        except BundleError as exc:
            named = getattr(exc, "file", None)  # a RecordError names its file
            subject = named if named and files.has(named) else files.root.name
            report.extend([failed(f"{name}.error", subject, str(exc))])
        except Exception as exc:  # noqa: BLE001 - a bug in one check must not hide the others
            line = str(exc).splitlines()[0] if str(exc) else ""
            report.extend([failed(f"{name}.error", files.root.name, f"{type(exc).__name__}: {line}")])


def verify_archive(path: Path) -> VerifyReport:
    """Verify one archive folder (ours with ``manifest.json``, or the original layout).

    Raises:
        BundleError: the folder does not exist or is neither layout.
    """
    path = Path(path)
    if not path.is_dir():
        raise BundleError(f"archive folder not found ({path}): pass an evidence/<run> folder")
    t0 = time.perf_counter()
    if (path / MANIFEST_NAME).exists():
        kind = "run"
        files = verify_run_archive(path)
        families = run_families()
    elif is_original_archive(path):
        kind = "original"
        files = verify_original_archive(path)
        families = original_families()
    else:
        raise BundleError(f"not an evidence archive ({path}): it has no manifest.json and is not the original "
                          "layout; pass evidence/<run-id> or evidence/rev88-original")
    report = VerifyReport(archive=str(path), kind=kind)
    report.extend(files.results)
    if kind == "run" and files.ok:
        from verify.ncu_reports import ReportReads

        files.background = ReportReads(files)  # the slow .ncu-rep reads overlap the other checks
    try:
        run_checks(files, families, report)
    finally:
        if files.background is not None:
            files.background.close()
    report.timings_s = {"total": time.perf_counter() - t0, "hashing": files.hashing_s}
    if files.background is not None:
        report.timings_s["ncu_report_read_in_workers"] = files.background.read_s
        report.timings_s["ncu_report_wait"] = files.background.wait_s
    return report


def discover_archives(evidence_dir: Path) -> list[Path]:
    """Every subfolder of ``evidence/`` with a manifest.json, plus the original archive."""
    if not evidence_dir.is_dir():
        raise BundleError(f"evidence folder not found ({evidence_dir}): run from the repository root or pass archives")
    found = [p for p in sorted(evidence_dir.iterdir()) if p.is_dir() and not p.is_symlink()
             and ((p / MANIFEST_NAME).exists() or is_original_archive(p))]
    if not found:
        raise BundleError(f"no archives under {evidence_dir}: pass an archive folder")
    return found
