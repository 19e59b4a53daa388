"""The maintained tools of scripts/: each prints its help, refuses bad arguments with a non-zero exit and
writes nothing then; scripts/gpu_host_run.sh also runs a command into a run folder and packs it (a shell
command stands in for rev88, so no GPU is needed)."""

from __future__ import annotations

import json
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
    ("gpu_host_run.sh", ["run"], "repository root"),   # reproduce from a folder that is not the checkout
    ("gpu_host_run.sh", ["run", "--", "rev88", "qualify", "--out", "{run}"], "repository root"),
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


def _run_folder(root: Path, phase: str, run_id: str, source: bytes | None) -> Path:
    """A small completed run folder: one phase with one record, its environment, maybe a kernel source."""
    from bundle import archive  # noqa: PLC0415

    run = archive.RunArchive(root)
    with run.phase(phase) as stage:
        archive.write_json_gz(stage / "record.json.gz", {"phase": phase})
    archive.write_json_gz(root / "environment.json.gz", {"schema_version": 1, "run_id": run_id,
                                                         "executions": [{"phases": [phase], "gpu_uuid": run_id}]})
    if source is not None:
        archive.write_bytes_gz(root / "fused_cuda.cu.gz", source)
    run.write_manifest()
    return root


def test_merge_archives_carries_the_kernel_source_and_refuses_two(tmp_path: Path) -> None:
    a = _run_folder(tmp_path / "a", "qualify", "a", b"// source\n")
    b = _run_folder(tmp_path / "b", "energy", "b", None)
    c = _run_folder(tmp_path / "c", "profile", "c", b"// another source\n")
    res = _run("merge_archives.py", "--dest", str(tmp_path / "merged"), str(a), str(b))
    assert res.returncode == 0, res.stderr
    merged = tmp_path / "merged"
    assert (merged / "fused_cuda.cu.gz").read_bytes() == (a / "fused_cuda.cu.gz").read_bytes()
    files = {e["path"] for e in json.loads((merged / "manifest.json").read_text())["files"]}
    assert {"fused_cuda.cu.gz", "qualify/record.json.gz", "energy/record.json.gz", "environment.json.gz"} <= files
    res = _run("merge_archives.py", "--dest", str(tmp_path / "two"), str(a), str(c))
    assert res.returncode != 0 and "one kernel source" in res.stderr and not (tmp_path / "two" / "manifest.json").exists()


def test_gpu_host_run_runs_rev88_from_the_checkout(tmp_path: Path) -> None:
    """``rev88`` in the command is this checkout's CLI under --python: one CPU draw into a run folder, packed
    with its manifest (a GPU host runs ``rev88 reproduce`` the same way)."""
    res = _run("gpu_host_run.sh", "--python", sys.executable, "--out", str(tmp_path / "back"),
               str(tmp_path / "cpu-run"), "--", "rev88", "qualify", "--device", "cpu", "--draws", "0", "--out", "{run}")
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    with tarfile.open(tmp_path / "back" / "cpu-run.tgz") as tar:
        names = set(tar.getnames())
    assert {"cpu-run/manifest.json", "cpu-run/qualify/draw-00.json.gz", "cpu-run/qualify/accuracy.json.gz"} <= names
    assert f"-m bundle.cli qualify --device cpu --draws 0 --out {tmp_path / 'cpu-run'} rc=0" in (
        tmp_path / "back" / "calls.txt").read_text()
