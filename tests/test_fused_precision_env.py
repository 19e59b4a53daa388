"""REV88_FUSED_PRECISION: how a host picks the rev88-fused product precision for every fixture job."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bundle import archive as arch
from bundle.fused_learner import DEFAULT_PRODUCT_PRECISION, product_precision_from_env
from bundle.jobs import FUSED_PRECISION_ENV, SubprocessEngine
from bundle.phases.fixture_runner import check_resumed_launch, engine_env
from protocol.errors import BundleError
from tests.conftest import REPO_ROOT


@pytest.mark.parametrize(("raw", "want"), [(None, "ieee"), ("", "ieee"), ("  ", "ieee"), ("ieee", "ieee"),
                                           ("tf32x3", "tf32x3"), (" tf32x3 ", "tf32x3")])
def test_the_variable_or_the_default(raw, want) -> None:
    environ = {} if raw is None else {FUSED_PRECISION_ENV: raw}
    assert DEFAULT_PRODUCT_PRECISION == "ieee"
    assert product_precision_from_env(environ) == want


@pytest.mark.parametrize("raw", ["tf32", "IEEE", "bf16x3", "fp32", "ieee,tf32x3", "1"])
def test_a_bad_value_is_one_line_naming_the_variable(raw) -> None:
    with pytest.raises(BundleError) as info:
        product_precision_from_env({FUSED_PRECISION_ENV: raw})
    message = str(info.value)
    assert FUSED_PRECISION_ENV in message and repr(raw) in message and "\n" not in message


def test_the_phases_forward_it_and_refuse_a_bad_one(monkeypatch) -> None:
    monkeypatch.delenv(FUSED_PRECISION_ENV, raising=False)
    assert FUSED_PRECISION_ENV not in engine_env(SubprocessEngine())
    monkeypatch.setenv(FUSED_PRECISION_ENV, "tf32x3")
    assert engine_env(SubprocessEngine())[FUSED_PRECISION_ENV] == "tf32x3"
    monkeypatch.setenv(FUSED_PRECISION_ENV, "tf32")
    with pytest.raises(BundleError, match=FUSED_PRECISION_ENV):
        engine_env(SubprocessEngine())


@pytest.mark.parametrize(("recorded", "env", "refused"), [
    (None, None, False), (None, "ieee", False), (None, "tf32x3", True),   # records before it was recorded: ieee
    ("ieee", None, False), ("ieee", "tf32x3", True), ("tf32x3", None, True), ("tf32x3", "tf32x3", False)])
def test_a_resume_refuses_kept_records_of_another_precision(monkeypatch, recorded, env, refused) -> None:
    """A kept record of a shipped fused archive without its precision (as records made before it was recorded),
    and with the precision its block would name now."""
    block = (arch.read_json_gz(REPO_ROOT / "evidence" / "h200-fused-cuda-20261204e" / "qualify" / "draw-04.json.gz")
             .get("fixture") or {}).get("learner")
    assert isinstance(block, dict) and block.get("product_precision") == "ieee"
    block = {k: v for k, v in block.items() if k != "product_precision"}
    if recorded is not None:
        block = {**block, "product_precision": recorded}
    monkeypatch.setenv("REV88_FUSED_CTAS", str(block["train_programs"]))   # only the precision differs
    monkeypatch.setenv("REV88_FUSED_KERNEL", "cuda")
    monkeypatch.delenv("REV88_FUSED_EXCHANGE", raising=False)
    if env is None:
        monkeypatch.delenv(FUSED_PRECISION_ENV, raising=False)
    else:
        monkeypatch.setenv(FUSED_PRECISION_ENV, env)
    if refused:
        with pytest.raises(BundleError, match=f"resume with {FUSED_PRECISION_ENV}=") as info:
            check_resumed_launch(block, "kept record")
        assert "\n" not in str(info.value)
    else:
        check_resumed_launch(block, "kept record")


def test_a_phase_refuses_a_bad_value_before_its_first_job(tmp_path) -> None:
    """``rev88 qualify`` with a malformed REV88_FUSED_PRECISION: one line naming it, exit non-zero, no job
    started (no fixture record, no phase folder)."""
    out = tmp_path / "run"
    env = {**os.environ, FUSED_PRECISION_ENV: "tf32", "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([sys.executable, "-m", "bundle.cli", "qualify", "--device", "cpu", "--learner", "rev88-fused",
                           "--jobs", "1", "--out", str(out)], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr and FUSED_PRECISION_ENV in lines[-1], proc.stderr[-2000:]
    assert not list(out.rglob("draw-*.json.gz")), sorted(map(str, out.rglob("*")))
    assert not (out / "qualify").is_dir()
