"""benchmarks/reproduce_bench.py ``table``: the shipped same-board measurements, and bad inputs as one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

BENCH = REPO_ROOT / "benchmarks" / "reproduce_bench.py"
MEASURED = REPO_ROOT / "tests" / "recorded" / "reproduce-bench"   # the old ways on h200-20261202's board
RUN = REPO_ROOT / "evidence" / "h200-20261202"


def _table(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), "table", *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=600)


def test_table_of_the_shipped_measurements_against_the_archive(tmp_path: Path) -> None:
    out = tmp_path / "table.json"
    res = _table(*map(str, sorted(MEASURED.glob("*.json"))), "--new-from", str(RUN), "--json", str(out))
    assert res.returncode == 0, res.stderr
    table = json.loads(out.read_text())
    rows = {r["phase"]: r for r in table["rows"]}
    assert rows["qualify"]["old_s"] == 97.705 and rows["qualify"]["new_s"] == 17.335
    assert rows["compare"]["new_over_old"] < 1 and rows["energy"]["old_s"] is None
    # the archive's profile resumed 10 of its 12 runs from a killed invocation: the figure is partial
    assert rows["profile"]["new_way"].startswith("--lock-scope process, 2 at once; partial: 10 of 12 runs")
    assert rows["profile"]["new_is_partial"] is True and rows["profile"]["new_over_old"] is None
    assert table["totals_are_lower_bounds"] is True and "new >" in res.stdout
    assert "board GPU-42bf1766-310c-4528-b64a-22424fca3756" in res.stdout


def _write(tmp_path: Path, name: str, payload) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(payload))
    return str(path)


@pytest.mark.parametrize(("payload", "message"), [
    ([1], "has no 'rows' list"),
    ({"rows": [{"phase": "qualify", "way": "old"}]}, "row 0 is not a phase"),
    ({"rows": [{"phase": "qualify", "way": "old", "seconds": 0}]}, "positive seconds"),
    ({"rows": [{"phase": "Profile", "way": "old", "seconds": 5.0}]}, "row 0 is not a phase"),
])
def test_malformed_rows_are_one_line(tmp_path: Path, payload, message: str) -> None:
    res = _table(_write(tmp_path, "bad.json", payload))
    assert res.returncode != 0 and message in res.stderr and "Traceback" not in res.stderr, res.stderr


def test_figures_of_two_boards_are_refused(tmp_path: Path) -> None:
    other = _write(tmp_path, "other.json", {"rows": [{"phase": "qualify", "way": "old", "seconds": 80.0,
                                                      "board_uuid": "GPU-other"}]})
    res = _table(other, "--new-from", str(RUN))
    assert res.returncode != 0 and "must be measured on one board" in res.stderr, res.stderr
    assert _table().returncode != 0


def test_scaling_bench_leaves_out_a_resumed_profile() -> None:
    """benchmarks/scaling_bench.py on the shipped archive: its profile resumed 10 runs, so no profile column."""
    res = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" / "scaling_bench.py"), str(RUN)], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("scaling_bench:") and "resumed 10 runs" in lines[0] and "left out" in lines[0]
    assert "profile" not in lines[1] and "w/o prof." in lines[1]
    assert lines[2].split()[:2] == ["1", "measured"] and float(lines[2].split()[-2]) == 442.1
