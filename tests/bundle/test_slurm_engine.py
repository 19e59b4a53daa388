"""SlurmEngine: command lines without a cluster, and real jobs on a real Slurm (marked ``slurm``).

.ci/run starts a single-node Slurm (Debian's slurm-wlm 22.05 with munge, slurmctld and slurmd,
accounting through the job-completion log) and sets REV88_REQUIRE_SLURM=1, so these tests run
there instead of skipping. After every real job the engine's scratch folder must be gone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bundle.jobs import TIMEOUT_EXIT_CODE, Engine, JobSpec
from bundle.slurm_engine import SlurmEngine, SlurmOptions, load_options
from protocol.errors import BundleError
from tests.conftest import interrupted_when


def test_script_and_sbatch_line_follow_the_spec(tmp_path: Path, monkeypatch) -> None:
    """No cluster needed: the batch script and the sbatch options say what the contract says."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    for tool in ("sbatch", "squeue", "sacct", "scancel"):
        (fake_bin / tool).write_text("#!/bin/sh\nexit 0\n")
        (fake_bin / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    engine = SlurmEngine(SlurmOptions(partition="gpu", account="proj", python="/shared/venv/bin/python",
                                      extra_args=("--constraint=a100",)))
    assert isinstance(engine, Engine) and engine.kind == "slurm"
    spec = JobSpec(name="profile/workspace-16-8-task-r00", argv=("ncu", "--csv", "{python}", "-m", "bundle.fixture"),
                   env={"CUBLAS_WORKSPACE_CONFIG": ":16:8", "REV88_ENGINE": "slurm"}, workdir=tmp_path,
                   gpu=True, timeout_s=90)
    script = engine.job_script(spec)
    assert script.startswith("#!/bin/bash\n")
    assert f"cd {tmp_path.resolve()}\n" in script
    assert "unset CUBLAS_WORKSPACE_CONFIG\n" in script and "export CUBLAS_WORKSPACE_CONFIG=:16:8\n" in script
    assert script.rstrip().endswith("exec ncu --csv /shared/venv/bin/python -m bundle.fixture")
    argv = engine.sbatch_argv(spec, tmp_path / "j.sh", tmp_path / "j.out", tmp_path / "j.err")
    assert argv[0] == str(fake_bin / "sbatch") and argv[-1] == str(tmp_path / "j.sh")
    assert {"--parsable", "--partition=gpu", "--account=proj", "--gres=gpu:1", "--time=2", "--constraint=a100",
            "--job-name=rev88-profile_workspace-16-8-task-r00", "--no-requeue"} <= set(argv)
    cpu = engine.sbatch_argv(JobSpec(name="q", argv=("true",), workdir=tmp_path, gpu=False), tmp_path / "j.sh",
                             tmp_path / "o", tmp_path / "e")
    assert not any(a.startswith(("--gres", "--gpus")) for a in cpu)
    gpus = SlurmEngine(SlurmOptions(gpu_request="gpus")).sbatch_argv(spec, tmp_path / "j", tmp_path / "o", tmp_path / "e")
    assert "--gpus=1" in gpus


def test_options_from_a_config_file_and_their_errors(tmp_path: Path) -> None:
    config = tmp_path / "slurm.toml"
    config.write_text('[slurm]\npartition = "a100"\naccount = "p1"\nextra_args = "--constraint=x --mem=8G"\n'
                      "retries = 2\n")
    options = load_options(config, account="p2", partition=None)
    assert (options.partition, options.account, options.retries) == ("a100", "p2", 2)
    assert options.extra_args == ("--constraint=x", "--mem=8G")
    (tmp_path / "bad.toml").write_text("partiton = 'x'\n")
    with pytest.raises(BundleError, match="unknown slurm option"):
        load_options(tmp_path / "bad.toml")
    (tmp_path / "broken.toml").write_text("partition = \n")
    with pytest.raises(BundleError, match="not valid TOML"):
        load_options(tmp_path / "broken.toml")
    with pytest.raises(BundleError, match="cannot read the slurm config"):
        load_options(tmp_path / "missing.toml")
    with pytest.raises(BundleError, match="gres or gpus"):
        SlurmOptions(gpu_request="mig")
    with pytest.raises(BundleError, match="retries"):
        load_options(None, retries="3")


def test_missing_slurm_cli_is_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BundleError, match=r"^Slurm's `sbatch` is not on PATH"):
        SlurmEngine().run(JobSpec(name="x", argv=("true",), workdir=tmp_path, gpu=False))
    assert not (tmp_path / ".work").exists() or not any((tmp_path / ".work").rglob("*.sh"))


@pytest.fixture
def engine(tmp_path: Path):
    yield SlurmEngine(SlurmOptions(poll_s=0.3, python=sys.executable))
    assert not (tmp_path / ".work" / "slurm").exists(), "the engine left its scratch folder behind"


@pytest.mark.slurm
def test_real_job_streams_lines_sets_env_and_returns_the_exit_code(engine: SlurmEngine, tmp_path: Path,
                                                                   monkeypatch) -> None:
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # must not reach the job
    script = ("import os, sys\nprint('first'); print('second', flush=True)\nprint('to stderr', file=sys.stderr)\n"
              "open('out.txt', 'w').write(os.environ.get('CUBLAS_WORKSPACE_CONFIG', 'unset') + ' ' + os.environ['X'])\n"
              "sys.exit(3)\n")
    lines: list[str] = []
    result = engine.run(JobSpec(name="test/slurm-ok", argv=("{python}", "-c", script), env={"X": "a b"},
                                workdir=tmp_path, gpu=False, timeout_s=120), on_line=lines.append)
    assert result.exit_code == 3 and not result.ok
    assert result.stdout == "first\nsecond\n" and result.stderr == "to stderr\n"
    assert sorted(lines) == ["first", "second", "to stderr"]
    assert (tmp_path / "out.txt").read_text() == "unset a b"
    (job_id,) = engine.job_ids
    state = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True).stdout
    assert "ExitCode=3:0" in state  # the code came from Slurm, the same as the controller reports


@pytest.mark.slurm
def test_real_cancelled_job_is_one_line(engine: SlurmEngine, tmp_path: Path) -> None:
    """A job killed from outside (scancel) is refused in one line, never returned as a result."""
    marker = tmp_path / "started"
    script = f"import pathlib, time; pathlib.Path({str(marker)!r}).write_text('x'); time.sleep(120)"

    def canceller() -> None:
        deadline = time.monotonic() + 600  # only against a hang: the job never starting is the failure
        while time.monotonic() < deadline:
            if marker.exists() and engine.job_ids:
                subprocess.run(["scancel", engine.job_ids[-1]], check=False)
                return
            time.sleep(0.2)

    thread = threading.Thread(target=canceller, daemon=True)
    thread.start()
    with pytest.raises(BundleError) as caught:
        engine.run(JobSpec(name="test/slurm-cancel", argv=("{python}", "-c", script), workdir=tmp_path, gpu=False,
                           timeout_s=300))
    message = str(caught.value)
    assert "\n" not in message and "CANCELLED" in message and engine.job_ids[-1] in message


@pytest.mark.slurm
@pytest.mark.slow
def test_real_timeout_gives_124(engine: SlurmEngine, tmp_path: Path) -> None:
    result = engine.run(JobSpec(name="test/slurm-timeout", argv=("sleep", "600"), workdir=tmp_path, gpu=False,
                                timeout_s=5))
    assert result.exit_code == TIMEOUT_EXIT_CODE and "time limit" in result.stderr


@pytest.mark.slurm
def test_interrupt_of_an_overlapped_phase_cancels_its_slurm_jobs(engine: SlurmEngine, tmp_path: Path) -> None:
    """Ctrl-C while two batch jobs run on worker threads: both are cancelled (scancel) before the
    interrupt propagates, so none outlives the phase."""
    from bundle.phases.fixture_runner import run_overlapped

    markers = [tmp_path / f"started-{k}" for k in range(2)]
    jobs = [lambda k=k: engine.run(JobSpec(name=f"test/slurm-sleep-{k}", argv=(
        "{python}", "-c", f"import pathlib, time; pathlib.Path({str(markers[k])!r}).write_text('x'); time.sleep(300)"),
        workdir=tmp_path, gpu=False, timeout_s=600)) for k in range(2)]
    interrupted_when(lambda: all(m.exists() for m in markers), lambda: run_overlapped(jobs, 2), timeout_s=600)
    assert all(m.exists() for m in markers)
    assert len(engine.job_ids) == 2
    for job_id in engine.job_ids:  # Slurm's own verdict: cancelled, not left to run or ended by itself
        verdict, deadline = None, time.monotonic() + 600  # the deadline only stops a hang
        while time.monotonic() < deadline:
            if (verdict := engine.accounting(job_id)) is not None:
                break
            time.sleep(0.2)
        assert verdict is not None and verdict[0].startswith("CANCELLED"), (job_id, verdict)
