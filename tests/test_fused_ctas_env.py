"""REV88_FUSED_CTAS: how a host picks the rev88-fused training programs for every fixture job."""

from __future__ import annotations

import pytest

from bundle.fused_learner import DEFAULT_TRAIN_CTAS, train_ctas_from_env
from bundle.jobs import FUSED_CTAS_ENV, SubprocessEngine
from bundle.phases.fixture_runner import engine_env
from protocol.errors import BundleError


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
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and FUSED_CTAS_ENV in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert not out.exists()


def test_a_phase_refuses_a_bad_value_before_its_first_job(tmp_path) -> None:
    """``rev88 qualify`` with a malformed REV88_FUSED_CTAS: one line naming it, exit non-zero, no job
    started (no fixture record, no finished phase folder)."""
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    from tests.conftest import REPO_ROOT  # noqa: PLC0415

    out = tmp_path / "run"
    env = {**os.environ, FUSED_CTAS_ENV: "08", "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([sys.executable, "-m", "bundle.cli", "qualify", "--device", "cpu", "--learner", "rev88-fused",
                           "--jobs", "1", "--out", str(out)], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr and FUSED_CTAS_ENV in lines[-1], proc.stderr[-2000:]
    assert not list(out.rglob("draw-*.json.gz")), sorted(map(str, out.rglob("*")))
    assert not (out / "qualify").is_dir()


@pytest.mark.parametrize(("archive", "env", "refused", "unrecorded"), [
    ("h200-fused-cuda-20261205", None, True, False), ("h200-fused-cuda-20261205", "8", False, False),
    ("h200-fused-cuda-20261205", "4", True, False), ("h200-fused-cuda-20261204e", "2", False, False),
    ("h200-fused-cuda-20261204e", None, True, False), ("h200-fused-cuda-20261204e", "1", False, True),
    ("h200-fused-cuda-20261204e", "2", True, True)])   # unrecorded: records made before train_programs: 1
def test_a_resume_refuses_kept_records_of_another_launch_shape(monkeypatch, archive, env, refused,
                                                               unrecorded) -> None:
    """Kept qualify, energy and profile records of the shipped fused archives (made with the CUDA tool) against
    the host's setting; ``unrecorded``: the same records without ``train_programs``, as older code wrote them."""
    from bundle import archive as arch  # noqa: PLC0415
    from bundle.phases.fixture_runner import check_resumed_launch  # noqa: PLC0415
    from tests.conftest import REPO_ROOT  # noqa: PLC0415

    root = REPO_ROOT / "evidence" / archive
    if env is None:
        monkeypatch.delenv(FUSED_CTAS_ENV, raising=False)
    else:
        monkeypatch.setenv(FUSED_CTAS_ENV, env)
    monkeypatch.setenv("REV88_FUSED_KERNEL", "cuda")   # the records' kernel tool: only the launch shape differs
    monkeypatch.delenv("REV88_FUSED_EXCHANGE", raising=False)
    monkeypatch.delenv("REV88_FUSED_PRECISION", raising=False)
    blocks = [(arch.read_json_gz(root / "qualify" / "draw-04.json.gz").get("fixture") or {}).get("learner"),
              arch.read_json_gz(root / "energy" / "trial-r01-rev88-fused-workspace-16-8.json.gz").get("learner"),
              (arch.read_json_gz(root / "profile" / "workspace-16-8-task-r00.json.gz").get("fixture") or {}).get(
                  "learner")]
    assert all(isinstance(b, dict) and b["name"] == "rev88-fused" for b in blocks), blocks
    if unrecorded:
        blocks = [{k: v for k, v in b.items() if k != "train_programs"} for b in blocks]
    for block in blocks:
        if refused:
            with pytest.raises(BundleError, match="resume with REV88_FUSED_CTAS=") as info:
                check_resumed_launch(block, "kept record")
            assert "\n" not in str(info.value)
        else:
            check_resumed_launch(block, "kept record")
    check_resumed_launch(arch.read_json_gz(root / "energy" / "trial-r01-rev88-workspace-16-8.json.gz").get("learner"),
                         "a rev88 record: nothing to check")
