"""The host references (``protocol.hostrefs``) and the phases' refusal without the frozen reference.

The search order is checked on the real checkout and on temporary folders named by the variables;
the refusals run the real commands with ``REV88_ORIGINAL_DIR`` naming a copy of the frozen
reference with a file removed, or an empty folder, and check that the run folder stays as it was.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bundle import preflight
from bundle.cli import app
from bundle.jobs import SubprocessEngine
from protocol import data, hostrefs
from protocol.errors import BundleError
from tests.conftest import REPO_ROOT
from tests.conftest import one_line_error as _one_line

runner = CliRunner()
ORIGINAL = REPO_ROOT / "evidence" / "rev88-original"
ENVS = [ref.env for ref in hostrefs.HOST_REFERENCES]


@pytest.fixture
def no_variables(monkeypatch):
    """The three variables unset (the image sets them; a developer's shell may)."""
    for env in ENVS:
        monkeypatch.delenv(env, raising=False)


def test_checkout_copies_come_first_and_the_image_copy_second(no_variables):
    assert hostrefs.checkout_root() == REPO_ROOT
    for ref in hostrefs.HOST_REFERENCES:
        assert ref.candidates() == [(REPO_ROOT / ref.repo_path, "the repository checkout"),
                                    (Path("/opt/rev88") / ref.repo_path, "the image's copy")]
        assert ref.find() == (REPO_ROOT / ref.repo_path, "the repository checkout")
    assert data.default_raw_dir() == REPO_ROOT / "data" / "mnist"


def test_a_set_variable_is_the_only_place_looked_at(monkeypatch, tmp_path):
    monkeypatch.setenv("REV88_ORIGINAL_DIR", str(tmp_path / "absent"))
    ref = hostrefs.FROZEN_REFERENCE
    assert ref.candidates() == [(tmp_path / "absent", "$REV88_ORIGINAL_DIR")]
    assert ref.find() is None  # the checkout's copy is not used instead
    with pytest.raises(hostrefs.HostReferenceMissing) as info:
        ref.require(["accuracy.json"])
    message = str(info.value)
    assert "\n" not in message and str(tmp_path / "absent") in message and "REV88_ORIGINAL_DIR" in message
    monkeypatch.setenv("REV88_ORIGINAL_DIR", "  ")  # blank counts as unset
    assert ref.find(["accuracy.json"])[0] == ORIGINAL


def test_a_folder_without_the_members_asked_for_does_not_count(monkeypatch, tmp_path):
    partial = tmp_path / "rev88-original"
    (partial / "results").mkdir(parents=True)
    shutil.copy2(ORIGINAL / "results" / "draw-00.json", partial / "results")
    monkeypatch.setenv("REV88_ORIGINAL_DIR", str(partial))
    assert hostrefs.FROZEN_REFERENCE.require(["results/draw-00.json"]) == partial
    with pytest.raises(hostrefs.HostReferenceMissing, match=r"holding results/draw-01\.json"):
        hostrefs.FROZEN_REFERENCE.require(["results/draw-01.json"])


def test_the_lock_file_is_a_file_and_the_variable_names_it(monkeypatch, tmp_path, no_variables):
    assert hostrefs.GPU_LOCK_FILE.require() == REPO_ROOT / "docker" / "requirements-gpu.lock"
    monkeypatch.setenv("REV88_GPU_LOCK_FILE", str(tmp_path))  # a folder is not the lock file
    assert hostrefs.GPU_LOCK_FILE.find() is None


def test_an_installed_copy_outside_a_checkout_looks_only_at_the_variable_and_the_image(monkeypatch, tmp_path,
                                                                                     no_variables):
    monkeypatch.setattr(hostrefs, "_PACKAGE_PARENT", tmp_path)  # as `pip install --target tmp_path`
    assert hostrefs.checkout_root() is None
    ref = hostrefs.FROZEN_REFERENCE
    assert ref.candidates() == [(Path("/opt/rev88/evidence/rev88-original"), "the image's copy")]
    message = ref.missing_message(["accuracy.json"])
    assert message == ("the frozen reference (evidence/rev88-original, holding accuracy.json) is not on this host: "
                       "looked at /opt/rev88/evidence/rev88-original (the image's copy); set REV88_ORIGINAL_DIR to a "
                       "copy of the repository's evidence/rev88-original")


def test_frozen_members_per_phase():
    assert preflight.frozen_members(["energy", "profile"]) == ()
    assert preflight.frozen_members(["validate"]) == ("cache-audit/cuda-validation.json",)
    assert preflight.frozen_members(["compare"], compare_draw=3) == ("results/draw-03.json",)
    assert preflight.frozen_members(["compare"], compare_draw=None) == ()  # custom inputs: not applicable
    assert preflight.frozen_members(["qualify", "compare"], qualify_draws=[0, 4]) == (
        "results/draw-00.json", "results/draw-04.json", "accuracy.json")
    assert len(preflight.frozen_members(["qualify"])) == 12


@pytest.mark.parametrize("existed", [False, True])
@pytest.mark.parametrize("args", [
    ["reproduce", "--device", "cpu", "--phases", "validate,compare,qualify"],
    ["reproduce", "--device", "cpu", "--phases", "compare"],
    ["validate", "--device", "cpu"], ["compare", "--device", "cpu"], ["qualify", "--device", "cpu"],
    ["qualify", "--device", "cpu", "--draws", "5"],
])
def test_without_the_frozen_reference_every_phase_refuses_in_one_line_and_writes_nothing(tmp_path, args, existed):
    empty = tmp_path / "empty"
    empty.mkdir()
    run_dir = tmp_path / "run"
    if existed:
        run_dir.mkdir()
    res = runner.invoke(app, [*args, "--out", str(run_dir)], env={"REV88_ORIGINAL_DIR": str(empty)})
    _one_line(res, "the frozen reference", f"looked at {empty} ($REV88_ORIGINAL_DIR)", "REV88_ORIGINAL_DIR")
    if existed:
        assert list(run_dir.iterdir()) == []
    else:
        assert not run_dir.exists()


def test_a_copy_without_the_draw_compare_runs_refuses_before_writing(tmp_path, monkeypatch):
    copy = tmp_path / "rev88-original"
    shutil.copytree(ORIGINAL, copy)
    (copy / "results" / "draw-03.json").unlink()
    monkeypatch.setenv("REV88_ORIGINAL_DIR", str(copy))
    from bundle.phases.compare import run_compare  # noqa: PLC0415

    run_dir = tmp_path / "run"
    with pytest.raises(BundleError, match=r"results/draw-03\.json.*REV88_ORIGINAL_DIR"):
        run_compare(run_dir, engine=SubprocessEngine(), draw_index=3, device="cpu")
    assert not run_dir.exists()
    res = runner.invoke(app, ["compare", "--device", "cpu", "--draw", "3", "--out", str(run_dir)],
                        env={"REV88_ORIGINAL_DIR": str(copy)})
    _one_line(res, "results/draw-03.json", str(copy))
    assert not run_dir.exists()


def test_no_source_file_location_builds_a_reference_path():
    """``grep -rn "parents[" bundle verify`` prints nothing: the one definition is protocol.hostrefs."""
    offenders = []
    for path in sorted([*(REPO_ROOT / "bundle").rglob("*.py"), *(REPO_ROOT / "verify").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "parents"):
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
    assert offenders == []


def test_protocol_imports_neither_side_nor_torch():
    """The shared definitions stay below both sides: importing them loads no bundle, verify or torch module."""
    code = ("import sys, protocol, protocol.hostrefs, protocol.learners; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'bundle', 'verify', 'torch', 'numpy'}))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stdout + res.stderr
