"""REV88_FUSED_CTAS: how a host picks the rev88-fused training programs for every fixture job."""

from __future__ import annotations

import pytest

from bundle.errors import BundleError
from bundle.fused_learner import DEFAULT_TRAIN_CTAS, train_ctas_from_env
from bundle.jobs import FUSED_CTAS_ENV, SubprocessEngine
from bundle.phases.fixture_runner import engine_env


@pytest.mark.parametrize(("raw", "want"), [(None, DEFAULT_TRAIN_CTAS), ("", DEFAULT_TRAIN_CTAS), ("8", 8),
                                           (" 16 ", 16), ("1", 1), ("999", 999)])
def test_the_variable_or_the_default(raw, want) -> None:
    environ = {} if raw is None else {FUSED_CTAS_ENV: raw}
    assert train_ctas_from_env(environ) == want


@pytest.mark.parametrize("raw", ["0", "-2", "+8", "8.0", "eight", "08", "1000", "1 2"])
def test_a_bad_value_is_one_line_naming_the_variable(raw) -> None:
    with pytest.raises(BundleError) as info:
        train_ctas_from_env({FUSED_CTAS_ENV: raw})
    message = str(info.value)
    assert FUSED_CTAS_ENV in message and repr(raw) in message and "\n" not in message


def test_the_phases_forward_it_to_fixture_jobs(monkeypatch) -> None:
    monkeypatch.delenv(FUSED_CTAS_ENV, raising=False)
    assert FUSED_CTAS_ENV not in engine_env(SubprocessEngine())
    monkeypatch.setenv(FUSED_CTAS_ENV, "8")
    assert engine_env(SubprocessEngine())[FUSED_CTAS_ENV] == "8"


def test_the_fixture_refuses_a_bad_value_in_one_line(tmp_path) -> None:
    """A real fixture process: a bad value ends it before any training, one line, no traceback, no record."""
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    from bundle.phases.profile import write_fixture_inputs  # noqa: PLC0415
    from tests.conftest import REPO_ROOT  # noqa: PLC0415

    npz, config = write_fixture_inputs(tmp_path)
    out = tmp_path / "fixture.json.gz"
    env = {**os.environ, FUSED_CTAS_ENV: "08", "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO_ROOT),
           "CUBLAS_WORKSPACE_CONFIG": ":16:8"}
    proc = subprocess.run([sys.executable, "-m", "bundle.fixture", "--input", str(npz), "--config", str(config),
                           "--output", str(out), "--mode", "measure", "--device", "cpu", "--learner", "rev88-fused"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and FUSED_CTAS_ENV in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert not out.exists()
