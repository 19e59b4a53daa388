"""The maintained tools of scripts/: each prints its help, refuses bad arguments with a non-zero exit and
writes nothing then; scripts/gpu_host_run.sh also runs a command into a run folder and packs it (a shell
command stands in for rev88, so no GPU is needed)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

SCRIPTS = REPO_ROOT / "scripts"
MAINTAINED = ("gpu_host_run.sh", "record_ncu.sh", "leaf_coverage.py", "lock_image_requirements.py",
              "merge_archives.py")


def _run(script: str, *args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    argv = ["bash", str(SCRIPTS / script)] if script.endswith(".sh") else [sys.executable, str(SCRIPTS / script)]
    return subprocess.run([*argv, *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})


def test_scripts_holds_the_maintained_tools_only() -> None:
    assert sorted(p.name for p in SCRIPTS.iterdir()) == sorted(MAINTAINED)


@pytest.mark.parametrize("script", MAINTAINED)
def test_help(script: str) -> None:
    res = _run(script, "--help")
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert "usage" in res.stdout.lower() or "Runs on the GPU host" in res.stdout
    text = (SCRIPTS / script).read_text()
    assert text.startswith(('"""', "#!"))   # a docstring or a header comment says what it does


@pytest.mark.parametrize(("script", "args", "word"), [
    ("gpu_host_run.sh", [], "no RUN_DIR"),
    ("gpu_host_run.sh", ["--bogus", "run"], "unknown option --bogus"),
    ("gpu_host_run.sh", ["--timeout"], "--timeout needs a value"),
    ("gpu_host_run.sh", ["--timeout", "1.5", "run"], "whole number of seconds"),
    ("gpu_host_run.sh", ["--split", "x", "run"], "whole number of MiB"),
    ("gpu_host_run.sh", ["run-a", "run-b"], "a second RUN_DIR"),
    ("gpu_host_run.sh", ["out/bad name"], "is not a run id"),
    ("gpu_host_run.sh", ["--phases", "qualify", "run", "--", "rev88", "qualify", "--out", "{run}"],
     "options of reproduce"),
    ("gpu_host_run.sh", ["run", "--", "echo", "hello"], "as {run}"),
    ("record_ncu.sh", ["--ncu"], "unknown option --ncu"),
    ("record_ncu.sh", ["ncu", "more"], "at most one"),
    ("merge_archives.py", ["--dest"], "--dest"),
    ("lock_image_requirements.py", ["--bogus"], "--bogus"),
    ("leaf_coverage.py", ["--sample", "many"], "--sample"),
])
def test_bad_arguments_are_refused_and_nothing_is_written(tmp_path: Path, script: str, args: list[str],
                                                          word: str) -> None:
    res = _run(script, *args, cwd=tmp_path if script == "gpu_host_run.sh" else REPO_ROOT)
    assert res.returncode == 2 and word in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert res.stdout == ""
    if script == "gpu_host_run.sh":
        assert list(tmp_path.iterdir()) == []
        assert len(res.stderr.strip().splitlines()) == 1


def test_gpu_host_run_runs_the_command_into_the_run_folder_and_packs_it(tmp_path: Path) -> None:
    write = 'mkdir -p "$1/qualify" && echo draw > "$1/qualify/draw-00.json" && echo scratch > "$1/cut.ncu-rep"'
    args = ["--out", "back", "--split", "1", "runs/h200-test", "--", "sh", "-c", write, "sh", "{run}"]
    first = _run("gpu_host_run.sh", *args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    second = _run("gpu_host_run.sh", "--out", "back", "runs/h200-test", "--", "sh", "-c", "exit 3", "sh", "{run}",
                  cwd=tmp_path)
    assert second.returncode == 3   # the command's status; the folder is packed again as it stands
    back = tmp_path / "back"
    calls = (back / "calls.txt").read_text().splitlines()
    assert [c.split(":")[0] for c in calls] == ["call 1", "call 2"] and calls[1].endswith(tuple(
        f"rc=3 wall_s={s}" for s in range(60)))
    assert (back / "call-1.log").exists() and (back / "call-2.log").exists()
    assert not list(back.glob("*.part-*"))   # the second call did not split: one whole archive, old parts gone
    with tarfile.open(back / "h200-test.tgz") as tar:
        names = sorted(tar.getnames())
    assert names == ["h200-test", "h200-test/qualify", "h200-test/qualify/draw-00.json"]   # no *.ncu-rep scratch
