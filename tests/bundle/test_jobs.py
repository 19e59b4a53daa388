"""Tests for bundle.jobs: SubprocessEngine environment, placeholder, streaming, bounds, timeout."""

from __future__ import annotations

import json
import sys

import pytest

from bundle.jobs import Engine, JobSpec, SubprocessEngine, child_environment, expand_argv
from protocol.errors import BundleError

ENV_DUMP = "import json, os; print(json.dumps({k: os.environ.get(k) for k in ('CUBLAS_WORKSPACE_CONFIG', 'REV88_X')}))"


def test_engine_protocol():
    assert isinstance(SubprocessEngine(), Engine)
    assert SubprocessEngine().kind == "native" and SubprocessEngine().image_reference is None


def test_workspace_config_comes_only_from_the_spec(tmp_path, monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    monkeypatch.setenv("REV88_X", "inherited")
    engine = SubprocessEngine()
    plain = engine.run(JobSpec("t/plain", ("{python}", "-c", ENV_DUMP), {}, tmp_path, gpu=False))
    assert plain.ok, plain.stderr
    assert json.loads(plain.stdout) == {"CUBLAS_WORKSPACE_CONFIG": None, "REV88_X": "inherited"}
    spec = JobSpec("t/ws", ("{python}", "-c", ENV_DUMP), {"CUBLAS_WORKSPACE_CONFIG": ":16:8"}, tmp_path, gpu=False)
    assert json.loads(engine.run(spec).stdout)["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"


def test_placeholder_expansion():
    assert expand_argv(("ncu", "--x", "{python}", "-m", "bundle.fixture"), "/py") == [
        "ncu", "--x", "/py", "-m", "bundle.fixture"]
    env = child_environment({"A": "1"}, base={"CUBLAS_WORKSPACE_CONFIG": ":0:0", "B": "2"})
    assert env == {"B": "2", "A": "1"}


def test_lines_stream_and_exit_code(tmp_path):
    code = "import sys; print('one'); print('two', file=sys.stderr); sys.stdout.flush(); sys.exit(3)"
    lines = []
    result = SubprocessEngine().run(JobSpec("t/lines", ("{python}", "-c", code), {}, tmp_path), on_line=lines.append)
    assert result.exit_code == 3 and not result.ok
    assert sorted(lines) == ["one", "two"]
    assert result.stdout == "one\n" and result.stderr == "two\n"
    assert result.last_error_line() == "two"
    assert result.duration_s > 0


def test_output_is_bounded_to_the_last_bytes(tmp_path):
    code = "for i in range(5000): print(f'line {i:06d}')"
    result = SubprocessEngine(output_limit_bytes=1000).run(JobSpec("t/big", ("{python}", "-c", code), {}, tmp_path))
    assert len(result.stdout.encode()) <= 1000
    assert result.stdout.endswith("line 004999\n")


SLEEPER = "import pathlib, sys, time; pathlib.Path(sys.argv[1]).touch(); time.sleep(60); pathlib.Path(sys.argv[2]).touch()"
"""A job that marks its start, sleeps 60 s and marks its end: a job killed mid-way never marks its end."""


def _alive(token: str) -> list[int]:
    """Processes whose command line holds *token* and that are not stopped: a job's process left running."""
    from tests.conftest import processes  # noqa: PLC0415

    return [p.pid for p in processes(token) if not p.stopped]


def test_timeout_kills_the_job(tmp_path):
    started, finished = tmp_path / "started", tmp_path / "finished"
    spec = JobSpec("t/slow", ("{python}", "-c", SLEEPER, str(started), str(finished)), {}, tmp_path, timeout_s=0.5)
    result = SubprocessEngine().run(spec)
    assert result.exit_code == 124
    assert "timed out" in result.stderr
    assert not finished.exists() and not _alive(str(finished))  # killed, neither waited for nor left running


def test_missing_program_is_one_line_error(tmp_path):
    with pytest.raises(BundleError, match="cannot start job"):
        SubprocessEngine().run(JobSpec("t/none", ("/nonexistent/prog",), {}, tmp_path))


def test_python_override(tmp_path):
    result = SubprocessEngine(python=sys.executable).run(
        JobSpec("t/py", ("{python}", "-c", "import sys; print(sys.executable)"), {}, tmp_path))
    assert result.stdout.strip() == sys.executable


def test_interrupt_kills_the_running_jobs_of_an_overlapped_phase(tmp_path) -> None:
    """Ctrl-C while two jobs run on worker threads (once both have started): their process groups are
    killed (neither ends by itself nor outlives the interrupt), the third never starts, the turn reads -1."""
    from bundle.jobs import JobSpec, SubprocessEngine
    from bundle.phases.fixture_runner import run_overlapped
    from tests.conftest import interrupted_when

    engine, turn = SubprocessEngine(), tmp_path / "gpu.lock.turn"
    marks = [(tmp_path / f"started-{k}", tmp_path / f"finished-{k}") for k in range(3)]
    jobs = [lambda k=k: engine.run(JobSpec(f"sleep-{k}", ("{python}", "-c", SLEEPER, *map(str, marks[k])), {},
                                           tmp_path)) for k in range(3)]
    interrupted_when(lambda: marks[0][0].exists() and marks[1][0].exists(), lambda: run_overlapped(jobs, 2, turn),
                     timeout_s=600)
    assert marks[0][0].exists() and marks[1][0].exists() and not marks[2][0].exists()
    assert not any(finished.exists() for _, finished in marks)
    assert not _alive(str(tmp_path / "finished-"))
    assert turn.read_text().strip() == "-1"


def test_update_turn_never_overwrites_a_failure(tmp_path) -> None:
    from bundle.boards import update_turn

    turn = tmp_path / "gpu.lock.turn"
    assert update_turn(turn, 1, only_if_below=False) == 0 and turn.read_text() == "1\n"
    assert update_turn(turn, 1, only_if_below=True) == 1 and turn.read_text() == "1\n"  # already there
    assert update_turn(turn, -1, only_if_below=False) == 1 and turn.read_text() == "-1\n"
    assert update_turn(turn, 2, only_if_below=False) == -1 and turn.read_text() == "-1\n"  # a job past its check
