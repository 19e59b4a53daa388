"""Reproduce durations and per-board placement of the single-board H200 archive, and forgeries of both.

Each forgery rewrites one record consistently (the manifest is rebuilt, so integrity passes) and
must FAIL the named check; the untouched archive passes every one of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, check_statuses, forge_record, linked_copy

ARCHIVE = REPO_ROOT / "evidence" / "h200-20261201-r2"
CHECKS = ("reproduce.timing.total", "reproduce.timing.phase", "reproduce.timing.record_stamps",
          "placement.board", "placement.recorded", "placement.gpu_lock", "qualify.concurrency")


def test_shipped_single_board_archive_passes_every_timing_and_placement_check() -> None:
    statuses = check_statuses(ARCHIVE)
    for check in CHECKS:
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


@pytest.mark.parametrize(("scope", "fails"), [("process", True), ("range", False)])
def test_profile_summary_lock_scope_must_be_the_runs(tmp_path: Path, scope: str, fails: bool) -> None:
    """The shipped archive's runs shared the lock (range); a summary naming another scope FAILs."""
    root = linked_copy(ARCHIVE, tmp_path)
    forge_record(root, "profile/profiles.json.gz", lambda rec: rec["placement"].update(gpu_lock_scope=scope))
    statuses = check_statuses(root).get("profile.summary.gpu_lock_scope", set())
    assert statuses == ({"FAIL"} if fails else {"PASS"}), statuses


def _process_text(rec: dict) -> None:
    from bundle.phases.profile import GPU_LOCK_TEXT

    rec["placement"]["gpu_lock"] = GPU_LOCK_TEXT["process"]  # claims the serialised lock; the runs shared it
    rec["placement"]["ncu_runs_started_at_once_per_board"] = 2


def _no_lock(rec: dict) -> None:
    rec["fixture"]["placement"]["gpu_lock"] = None


@pytest.mark.parametrize(("rel", "change"), [("profile/profiles.json.gz", _process_text),
                                             ("profile/workspace-16-8-task-r02.json.gz", _no_lock)])
def test_profile_summary_lock_text_must_be_the_runs(tmp_path: Path, rel: str, change) -> None:
    """Without ``gpu_lock_scope`` (older archives), the lock sentence still has to be the runs' scope's."""
    root = linked_copy(ARCHIVE, tmp_path)
    forge_record(root, rel, change)
    statuses = check_statuses(root)
    assert statuses.get("profile.summary.gpu_lock_text") == {"FAIL"}, statuses.get("profile.summary.gpu_lock_text")
    assert "run.fields.profile.error" not in statuses  # a null lock record is a verdict, not a crash
