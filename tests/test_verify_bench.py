"""benchmarks/verify_bench.py with tiny settings: its figures and lines exist, bad input is one line (no speed asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

BENCH = REPO_ROOT / "benchmarks" / "verify_bench.py"
VENV = Path(sys.prefix)


def _git_checkout() -> bool:
    try:
        return subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True,
                              check=False).returncode == 0
    except OSError:
        return False


needs_git = pytest.mark.skipif(not _git_checkout(), reason="needs git and a git checkout (the baseline is exported)")


def _bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), *args], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
@needs_git
def test_one_archive_against_head(tmp_path: Path) -> None:
    if not (VENV / "bin" / "python").exists():
        pytest.skip(f"{VENV} has no bin/python")
    out = tmp_path / "figures.json"
    res = _bench("--venv", str(VENV), "--repeat", "1", "--archives", "pinned-cpu-20261201", "--no-all",
                 "--baseline", "HEAD", "--json", str(out))
    assert res.returncode == 0, res.stderr
    assert "(a) venv creation: not measured" in res.stdout
    assert "ncu_report importable in" in res.stdout
    assert "verdicts of the 1 archives, current vs baseline (timings aside):" in res.stdout
    figures = json.loads(out.read_text())
    labels = [row["label"] for row in figures["rows"]]
    assert labels[0].startswith("current ") and labels[1].startswith("baseline ") and len(labels) == 2
    for row in figures["rows"]:
        assert row["runs"] == 1 and row["wall_median_s"] > 0 and row["exit_codes"] == [0]
    assert figures["rows"][0]["current_over_this"] is None and figures["rows"][1]["current_over_this"] > 0
    assert isinstance(figures["verdicts_identical"], bool)


@pytest.mark.parametrize(("args", "message"), [
    (["--repeat", "0"], "give at least 1 timed run"),
    (["--archives", "no-such-archive"], "no-such-archive not under"),
    (["--venv", "/nonexistent-venv"], "no bin/python there"),
])
def test_bad_arguments_are_one_line(args: list[str], message: str) -> None:
    res = _bench(*args)
    assert res.returncode == 2 and message in res.stderr and "Traceback" not in res.stderr, res.stderr


@needs_git
def test_unknown_baseline_is_one_line() -> None:
    res = _bench("--venv", str(VENV), "--repeat", "1", "--archives", "pinned-cpu-20261201",
                 "--baseline", "no-such-ref-41")
    assert res.returncode == 2, res.stderr
    assert "baseline 'no-such-ref-41' is not a commit of this clone" in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
