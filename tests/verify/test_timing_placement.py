"""Reproduce durations and per-board placement of the single-board H200 archive, and forgeries of both.

Each forgery rewrites one record consistently (the manifest is rebuilt, so integrity passes) and
must FAIL the named check; the untouched archive passes every one of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, check_statuses, forge_record, linked_copy

ARCHIVE = REPO_ROOT / "evidence" / "h200-20261202"
CHECKS = ("reproduce.timing.total", "reproduce.timing.phase", "reproduce.timing.record_stamps",
          "placement.board", "placement.recorded", "placement.gpu_lock", "qualify.concurrency")


def _stamps_pass(root: Path) -> bool:
    """Every ``reproduce.timing.record_stamps`` verdict of *root* PASSes, except where the phase has no stamp to
    place (qualification's records carry none): that one compared nothing and is UNAVAILABLE, never PASS."""
    verdicts = [r for r in _verdicts(root) if r.check_id == "reproduce.timing.record_stamps"]
    empty = [r for r in verdicts if r.status.value == "UNAVAILABLE"]
    assert all(r.recorded == 0 and r.subject.startswith("qualify/") for r in empty), empty
    return bool(verdicts) and all(r.status.value == "PASS" for r in verdicts if r not in empty)


def test_shipped_single_board_archive_passes_every_timing_and_placement_check() -> None:
    statuses = check_statuses(ARCHIVE)
    for check in CHECKS:
        if check == "reproduce.timing.record_stamps":
            assert _stamps_pass(ARCHIVE)
            continue
        assert statuses.get(check) == {"PASS"}, (check, statuses.get(check))


def _phase(name: str):
    def change(env: dict) -> None:
        for inv in env["reproduce_invocations"]:
            for p in inv["phases"]:
                if p["phase"] == name and p["status"] == "ran":
                    p["duration_s"] = p["duration_s"] / 2
    return change


def _total(env: dict) -> None:
    env["reproduce_invocations"][0]["total_s"] = 1.0


def _stamp(rec: dict) -> None:
    rec["completed_at_utc"] = "2026-11-01T00:00:00+00:00"


def _board(rec: dict) -> None:
    rec["fixture"]["placement"]["board_uuid"] = "GPU-00000000-0000-0000-0000-000000000000"


def _unplaced(rec: dict) -> None:
    rec["fixture"]["placement"]["given_board_uuid"] = None


def _alone(rec: dict) -> None:
    rec["concurrency"]["ran_alone"] = True
    rec["concurrency"]["overlapping_draws"] = []


def _shared_energy_lock(rec: dict) -> None:
    rec["placement"]["gpu_lock"]["scope"] = "range"  # an energy trial that shared the board


def _lock_time(rec: dict) -> None:
    rec["placement"]["gpu_lock"]["acquired_at_s"] += 5.0


def _exclusive_after_range(rec: dict) -> None:
    """A shared profile lock made exclusive only after its range: the range was not alone on the board."""
    lock, steps = rec["placement"]["gpu_lock"], rec["timeline"]["steps"]
    done = next(s["at_s"] for s in steps if s["step"] == "profile_range_done")
    lock["scope"] = "range"
    lock["exclusive"] = {"waited_s": 0.0, "acquired_at_s": done + 1.0}
    steps.append({"step": "gpu_lock_exclusive", "at_s": done + 1.0})


@pytest.mark.parametrize(("rel", "change", "check"), [
    ("energy/trial-r02-workspace-16-8.json.gz", _shared_energy_lock, "placement.gpu_lock"),
    ("energy/trial-r01-workspace-0-0.json.gz", _lock_time, "placement.gpu_lock"),
    ("profile/workspace-16-8-task-r01.fixture.json.gz", _exclusive_after_range, "placement.gpu_lock"),
    ("environment.json.gz", _phase("energy"), "reproduce.timing.phase"),
    ("environment.json.gz", _total, "reproduce.timing.total"),
    ("qualify/accuracy.json.gz", _stamp, "reproduce.timing.record_stamps"),
    ("qualify/draw-04.json.gz", _board, "placement.board"),
    ("qualify/draw-07.json.gz", _alone, "qualify.concurrency"),
    ("qualify/draw-09.json.gz", _unplaced, "placement.recorded"),
])
def test_forgery_fails(tmp_path: Path, rel: str, change, check: str) -> None:
    root = linked_copy(ARCHIVE, tmp_path)
    forge_record(root, rel, change)
    assert "FAIL" in check_statuses(root).get(check, set()), check


@pytest.mark.parametrize(("scope", "fails"), [("range", True), ("process", False)])
def test_profile_summary_lock_scope_must_be_the_runs(tmp_path: Path, scope: str, fails: bool) -> None:
    """The shipped archive's runs held the board alone (process); a summary naming another scope FAILs."""
    root = linked_copy(ARCHIVE, tmp_path)
    forge_record(root, "profile/profiles.json.gz", lambda rec: rec["placement"].update(gpu_lock_scope=scope))
    statuses = check_statuses(root).get("profile.summary.gpu_lock_scope", set())
    assert statuses == ({"FAIL"} if fails else {"PASS"}), statuses


def _range_text(rec: dict) -> None:
    from protocol.profile_texts import GPU_LOCK_TEXT

    rec["placement"]["gpu_lock"] = GPU_LOCK_TEXT["range"]  # claims the shared lock; the runs were serialised
    rec["placement"]["ncu_runs_started_at_once_per_board"] = 12


def _no_lock(rec: dict) -> None:
    rec["fixture"]["placement"]["gpu_lock"] = None


@pytest.mark.parametrize(("rel", "change"), [("profile/profiles.json.gz", _range_text),
                                             ("profile/workspace-16-8-task-r02.json.gz", _no_lock)])
def test_profile_summary_lock_text_must_be_the_runs(tmp_path: Path, rel: str, change) -> None:
    """Without ``gpu_lock_scope`` (older archives), the lock sentence still has to be the runs' scope's."""
    root = linked_copy(ARCHIVE, tmp_path)
    forge_record(root, rel, change)
    statuses = check_statuses(root)
    assert statuses.get("profile.summary.gpu_lock_text") == {"FAIL"}, statuses.get("profile.summary.gpu_lock_text")
    assert "run.fields.profile.error" not in statuses  # a null lock record is a verdict, not a crash


# The shipped archive's profile was stopped by a call limit after 10 of its 12 runs (that invocation
# recorded nothing) and resumed by invocation 1: the 10 resumed runs' stamps lie in the unrecorded gap.
RESUMED = "profile/workspace-4096-8-task-r01.json.gz"
NOT_RESUMED = "profile/workspace-16-8-task-r02.json.gz"


def test_resumed_runs_in_an_unrecorded_gap_are_unavailable_not_passed() -> None:
    results = [r for r in _verdicts(ARCHIVE) if r.check_id.startswith("reproduce.timing.record_stamps")]
    by_id = {r.check_id: r for r in results}
    assert by_id["reproduce.timing.record_stamps_unrecorded"].status.value == "UNAVAILABLE"
    assert by_id["reproduce.timing.record_stamps_unrecorded"].recorded == 20  # 10 runs x (record, fixture record)
    assert {r.status.value for r in results if r.check_id == "reproduce.timing.record_stamps"
            and r.recorded} == {"PASS"}


def _verdicts(root: Path):
    from verify.registry import verify_archive  # noqa: PLC0415

    return list(verify_archive(root).results)


def _stamp_at(text: str):
    def change(rec: dict) -> None:
        rec["finished_at_utc"] = text
    return change


@pytest.mark.parametrize(("rel", "stamp"), [
    (RESUMED, "2026-12-02T05:20:00+00:00"),      # a resumed run inside the energy phase of invocation 0
    (RESUMED, "2026-12-02T05:36:30+00:00"),      # a resumed run stamped after the resume started
    (NOT_RESUMED, "2026-12-02T05:30:00+00:00"),  # a run the resume ran, stamped in the gap
])
def test_stamps_outside_the_gap_or_of_runs_not_resumed_fail(tmp_path: Path, rel: str, stamp: str) -> None:
    root = linked_copy(ARCHIVE, tmp_path)
    forge_record(root, rel, _stamp_at(stamp))
    assert "FAIL" in check_statuses(root).get("reproduce.timing.record_stamps", set())


def _add_interrupted(env: dict) -> None:
    """Record the stopped call 2 as the CLI now would: an interrupted invocation between the two."""
    first, resume = env["reproduce_invocations"]
    stopped = {**resume, "started_at_utc": "2026-12-02T05:25:50+00:00",
               "finished_at_utc": "2026-12-02T05:35:15+00:00", "total_s": 565.0, "status": "interrupted",
               "phases": [{"phase": "profile", "status": "interrupted", "duration_s": 560.0,
                           "started_at_utc": "2026-12-02T05:25:55+00:00",
                           "finished_at_utc": "2026-12-02T05:35:15+00:00"}]}
    env["reproduce_invocations"] = [first, stopped, resume]


def test_a_recorded_interrupted_invocation_covers_the_resumed_runs(tmp_path: Path) -> None:
    """With the stopped call's invocation recorded as interrupted (what the CLI now writes on SIGTERM),
    the resumed runs' stamps are checked against its span and PASS; nothing is left UNAVAILABLE."""
    root = linked_copy(ARCHIVE, tmp_path)
    forge_record(root, "environment.json.gz", _add_interrupted)
    statuses = check_statuses(root)
    assert _stamps_pass(root)
    assert "reproduce.timing.record_stamps_unrecorded" not in statuses
    assert "FAIL" not in statuses.get("reproduce.timing.total", set()) | statuses.get("reproduce.timing.phase", set())


def _fake_span(status: str):
    """A phase span added to the complete invocation 0, wide enough to cover every stamp (a forgery)."""
    def change(env: dict) -> None:
        env["reproduce_invocations"][0]["phases"].append(
            {"phase": "profile", "status": status, "duration_s": 86399.0,
             "started_at_utc": "2026-12-02T00:00:00+00:00", "finished_at_utc": "2026-12-02T23:59:59+00:00"})
    return change


def _reversed(env: dict) -> None:
    env["reproduce_invocations"].reverse()


@pytest.mark.parametrize(("change", "checks"), [
    (_fake_span("interrupted"), {"reproduce.timing.status", "reproduce.timing.phase"}),
    (_fake_span("failed"), {"reproduce.timing.status", "reproduce.timing.phase"}),
    (_reversed, {"reproduce.timing.chronology"}),
])
def test_forged_invocation_spans_fail(tmp_path: Path, change, checks: set) -> None:
    """A failed/interrupted span that its invocation does not hold, or invocations out of order, FAIL."""
    root = linked_copy(ARCHIVE, tmp_path)
    forge_record(root, "environment.json.gz", change)
    statuses = check_statuses(root)
    for check in checks:
        assert "FAIL" in statuses.get(check, set()), (check, statuses.get(check))


def test_a_run_the_resume_made_may_not_hide_in_an_earlier_interrupted_span(tmp_path: Path) -> None:
    """With the stopped call recorded, a run the summary does not list as resumed, stamped inside that
    call's span, FAILs: the profile's summary says which runs came from earlier spans."""
    root = linked_copy(ARCHIVE, tmp_path)

    forge_record(root, "environment.json.gz", _add_interrupted)
    forge_record(root, NOT_RESUMED, _stamp_at("2026-12-02T05:30:00+00:00"))
    assert "FAIL" in check_statuses(root).get("reproduce.timing.record_stamps", set())


# A phase completed after a resume lists the records an earlier attempt staged (bundle.archive's
# resumed.json.gz); the shipped archive's energy phase was not resumed, so these add the list.
TRIAL = "energy/trial-r01-workspace-16-8.json.gz"
OTHER_TRIAL = "energy/trial-r02-workspace-16-8.json.gz"
BEFORE_THE_RUN = "2026-12-02T05:10:00+00:00"  # before invocation 0 (no span recorded there)


def _add_resumed(root: Path, folder: str, runs: list, **overrides) -> None:
    from bundle import archive  # noqa: PLC0415

    archive.write_json_gz(root / folder / archive.RESUMED_NAME,
                          {"schema_version": archive.SCHEMA_VERSION, "phase": folder, "resumed_runs": runs,
                           "scope": archive.RESUMED_SCOPE, **overrides})
    (root / "manifest.json").unlink()
    archive.RunArchive(root).write_manifest()


def _completed_at(text: str):
    def change(rec: dict) -> None:
        rec["completed_at_utc"] = text
    return change


def test_a_listed_resumed_record_from_an_unrecorded_invocation_is_unavailable(tmp_path: Path) -> None:
    """Listed in energy/resumed.json.gz and stamped before any recorded invocation: UNAVAILABLE (the
    attempt that made it recorded nothing); the same stamp without the list, or on a record the list
    does not name, FAILs."""
    root = linked_copy(ARCHIVE, tmp_path)
    forge_record(root, TRIAL, _completed_at(BEFORE_THE_RUN))
    assert "FAIL" in check_statuses(root).get("reproduce.timing.record_stamps", set())  # no list: nothing excuses it
    _add_resumed(root, "energy", ["trial-r01-workspace-16-8"])
    statuses = check_statuses(root)
    assert statuses.get("phase.resumed.form") == {"PASS"} and statuses.get("phase.resumed.runs") == {"PASS"}
    assert _stamps_pass(root)
    assert statuses.get("reproduce.timing.record_stamps_unrecorded") == {"UNAVAILABLE"}
    forge_record(root, OTHER_TRIAL, _completed_at(BEFORE_THE_RUN))  # not listed: made by the completing run
    assert "FAIL" in check_statuses(root).get("reproduce.timing.record_stamps", set())


@pytest.mark.parametrize(("runs", "overrides", "check"), [
    (["trial-r99-workspace-16-8"], {}, "phase.resumed.runs"),   # no such record
    (["trial-r02-workspace-16-8", "trial-r01-workspace-16-8"], {}, "phase.resumed.form"),  # not sorted
    ([], {}, "phase.resumed.form"),                             # an empty list is never written
    (["trial-r01-workspace-16-8"], {"phase": "profile"}, "phase.resumed.form"),
    (["trial-r01-workspace-16-8"], {"scope": "anything"}, "phase.resumed.form"),
])
def test_forged_resumed_lists_fail(tmp_path: Path, runs: list, overrides: dict, check: str) -> None:
    root = linked_copy(ARCHIVE, tmp_path)
    _add_resumed(root, "energy", runs, **overrides)
    assert "FAIL" in check_statuses(root).get(check, set()), check
