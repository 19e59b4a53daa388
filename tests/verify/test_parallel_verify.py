"""verify_archives: archives verified in worker processes give the verdicts of one process, in the order given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protocol.errors import BundleError
from tests.conftest import REPO_ROOT
from verify.registry import WORKERS_ENV, archive_workers, verify_archive, verify_archives

EVIDENCE = REPO_ROOT / "evidence"
PATHS = (EVIDENCE / "pinned-cpu-20261201", EVIDENCE / "rev88-original")


def _verdicts(report) -> list[str]:
    return [json.dumps(r.to_json(), sort_keys=True) for r in report.results]


def test_workers_give_the_verdicts_of_one_process_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    stages: list[tuple[str, int]] = []
    parallel = verify_archives(PATHS, workers=2, on_progress=lambda stage, n: stages.append((stage, n)))
    alone = [verify_archive(p) for p in PATHS]
    assert [r.archive for r in parallel] == [str(p) for p in PATHS]
    for got, want in zip(parallel, alone, strict=True):
        assert got.kind == want.kind and _verdicts(got) == _verdicts(want)
    # one progress call per archive, covering all of its stages
    assert sorted(stage for stage, _ in stages) == sorted(f"{p}: verified" for p in PATHS)
    assert sum(n for _, n in stages) == 1 + 11 + 1 + 12  # integrity + families: run (11), original (12)


def test_the_first_failing_path_in_order_raises(tmp_path: Path) -> None:
    missing, other = tmp_path / "no-such-run", tmp_path / "not-an-archive"
    other.mkdir()
    with pytest.raises(BundleError, match=r"archive folder not found .*no-such-run"):
        verify_archives([PATHS[0], missing, other], workers=2)


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_worker_count_is_one_line(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(WORKERS_ENV, value)
    with pytest.raises(BundleError, match=f"{WORKERS_ENV}='{value}' is not a positive integer"):
        archive_workers(3)


def test_worker_count_follows_the_variable_and_the_archives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WORKERS_ENV, "3")
    assert archive_workers(5) == 3 and archive_workers(2) == 2 and archive_workers(1) == 1
    monkeypatch.delenv(WORKERS_ENV)
    assert 1 <= archive_workers(16) <= 4 and archive_workers(1) == 1



@pytest.mark.parametrize("name", ["h200-20261202", "h200-fused-cuda-20261205"])
def test_no_check_changes_the_shared_fixture_records(monkeypatch: pytest.MonkeyPatch, name: str,
                                                    hidden_ncu_report: None) -> None:
    """fixture_records parses the records once per archive and hands the same objects to every family: after a
    whole verification they still serialise as parsed, and the verdicts are those of a fresh parse per call
    (without NVIDIA's reader, whose verdicts carry read times)."""
    from verify.checks import run, run_common  # noqa: PLC0415

    original = run.fixture_records
    parsed: list[tuple[object, list[tuple[str, str]]]] = []

    def snapshotting(f):
        if "fixture_records" not in f.shared:
            records = original(f)
            parsed.append((f, [(rel, json.dumps(rec, sort_keys=True)) for rel, rec in records]))
            return records
        return original(f)

    for module in (run, run_common):  # run re-exports run_common's; run_energy calls run_common's
        monkeypatch.setattr(module, "fixture_records", snapshotting)
    shared = verify_archive(EVIDENCE / name)
    (files, before), = parsed
    assert before and [(rel, json.dumps(rec, sort_keys=True)) for rel, rec in files.shared["fixture_records"]] == before

    def fresh_each_call(f):
        f.shared.pop("fixture_records", None)
        return original(f)

    for module in (run, run_common):
        monkeypatch.setattr(module, "fixture_records", fresh_each_call)
    assert _verdicts(verify_archive(EVIDENCE / name)) == _verdicts(shared)


def test_ctrl_c_stops_the_workers() -> None:
    """Ctrl-C while the workers verify: KeyboardInterrupt here, and every worker is ended at once (SIGTERM), not
    left to finish its archive."""
    import multiprocessing  # noqa: PLC0415
    import signal  # noqa: PLC0415

    from tests.conftest import interrupted_when  # noqa: PLC0415

    before = set(multiprocessing.active_children())
    workers: set = set()

    def started() -> bool:
        workers.update(set(multiprocessing.active_children()) - before)
        return bool(workers)

    interrupted_when(started, lambda: verify_archives([EVIDENCE / "h200-20261202", *PATHS], workers=2))
    import time  # noqa: PLC0415

    for process in workers:
        # The executor's own thread may reap the worker first (our join then sees no status yet): wait until the
        # status is known; the 600 s bound only guards against a hang, it never decides the outcome.
        deadline = time.monotonic() + 600
        while process.exitcode is None and time.monotonic() < deadline:
            process.join(0.1)
        assert process.exitcode == -signal.SIGTERM
