"""What the folder-writing commands leave in ``--out``: nothing for a reproduce that has nothing to run, never
anything inside the frozen reference (or a folder in the original archive's layout), and which phases the verifier
accepts as run in an archive that mixes a phase command's own run with ``rev88 reproduce`` invocations.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bundle.cli import app
from tests.conftest import REPO_ROOT, check_statuses, forge_record, linked_copy, one_line_error

PINNED_CPU = REPO_ROOT / "evidence" / "pinned-cpu-20261201"
ORIGINAL = REPO_ROOT / "evidence" / "rev88-original"


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """relative path -> (size, mtime_ns) of every entry under *root*."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        out[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def test_a_reproduce_with_every_phase_complete_writes_nothing_and_says_so(tmp_path: Path) -> None:
    run = linked_copy(PINNED_CPU, tmp_path)
    before = _tree(run)
    res = CliRunner().invoke(app, ["reproduce", "--device", "cpu", "--phases", "qualify", "--out", str(run)])
    assert res.exit_code == 0, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("nothing to do: qualify already complete"), res.output
    assert _tree(run) == before
    statuses = check_statuses(run)
    assert "FAIL" not in set().union(*statuses.values()), {k: v for k, v in statuses.items() if "FAIL" in v}


def _skipped_invocation(env: dict) -> None:
    """What a reproduce that ran no phase recorded before: an invocation listing the phase as skipped."""
    stamp = "2026-12-01T11:00:00+00:00"
    env["reproduce_invocations"] = [{
        "command": ["rev88", "reproduce"], "engine": "native", "device": "cpu", "gpus": None, "boards": [],
        "started_at_utc": stamp, "finished_at_utc": stamp, "total_s": 0.0, "total_s_covers": "probe",
        "status": "complete", "phases": [{"phase": "qualify", "status": "skipped (already complete)",
                                          "duration_s": 0.0, "started_at_utc": None, "finished_at_utc": None}]}]


def test_a_phase_its_own_command_ran_counts_as_ran_beside_invocations(tmp_path: Path) -> None:
    run = linked_copy(PINNED_CPU, tmp_path)
    forge_record(run, "environment.json.gz", _skipped_invocation)
    assert check_statuses(run)["reproduce.timing.phases_ran"] == {"PASS"}


def test_a_phase_neither_an_invocation_nor_an_execution_lists_fails(tmp_path: Path) -> None:
    run = linked_copy(PINNED_CPU, tmp_path)

    def change(env: dict) -> None:
        _skipped_invocation(env)
        for entry in env["executions"]:
            entry["phases"] = [p for p in entry["phases"] if p != "qualify"]
    forge_record(run, "environment.json.gz", change)
    assert "FAIL" in check_statuses(run)["reproduce.timing.phases_ran"]


COMMANDS = [
    ["validate", "--device", "cpu"],
    ["compare", "--device", "cpu"],
    ["qualify", "--device", "cpu", "--draws", "0"],
    ["energy"],
    ["profile"],
    ["reproduce", "--device", "cpu", "--phases", "compare"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
@pytest.mark.parametrize("where", ["reference", "inside", "original-layout"])
def test_no_command_writes_into_the_frozen_reference(tmp_path: Path, monkeypatch, args: list[str],
                                                     where: str) -> None:
    reference = linked_copy(ORIGINAL, tmp_path, "reference")
    monkeypatch.setenv("REV88_ORIGINAL_DIR", str(reference))
    other = linked_copy(ORIGINAL, tmp_path, "another-copy")  # not the reference, but the original's layout
    out = {"reference": reference, "inside": reference / "results" / "run-a",
           "original-layout": other / "run-b"}[where]
    before = _tree(tmp_path)
    res = CliRunner().invoke(app, [*args, "--out", str(out)])
    line = one_line_error(res, f"--out {out}", "nothing was written")
    assert ("the frozen reference" if where != "original-layout" else "the original archive's layout") in line
    assert _tree(tmp_path) == before


def test_the_verifier_says_a_changed_reference_is_not_in_the_layout_not_missing(tmp_path: Path) -> None:
    reference = linked_copy(ORIGINAL, tmp_path, "reference")
    (reference / "manifest.json").write_text("{}\n", encoding="utf-8")  # what a run written into it adds
    proc = subprocess.run([sys.executable, "-m", "bundle.cli", "verify", str(PINNED_CPU)], capture_output=True,
                          text=True, env={**os.environ, "REV88_ORIGINAL_DIR": str(reference)}, timeout=600)
    assert proc.returncode != 0
    assert "not in the original archive's layout" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert "is missing on this host" not in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
