"""Tests for bundle.phases.validate: smoke data, CPU end to end (refusals included), GPU run."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bundle import archive
from bundle.cli import app
from bundle.commands.validate import replay_label
from bundle.jobs import SubprocessEngine
from bundle.phases import validate
from protocol.data import array_sha256
from tests.conftest import ORIGINAL_ARCHIVE, REPO_ROOT

ORIGINAL = json.loads((ORIGINAL_ARCHIVE / "cache-audit" / "cuda-validation.json").read_text())


def test_smoke_inputs_equal_the_originals():
    inputs = validate.smoke_inputs()
    want = ORIGINAL["api_cli_smoke"]["metadata"]["input_hashes"]
    assert {k: array_sha256(v) for k, v in inputs.items()} == want
    assert validate.SMOKE_CONFIG == ORIGINAL["api_cli_smoke"]["config"]


@pytest.mark.slow
def test_cpu_validate_end_to_end(tmp_path):
    run_dir = tmp_path / "run"
    record = validate.run_validate(run_dir, engine=SubprocessEngine(), device="cpu")
    smoke = record["api_cli_smoke"]
    assert smoke["query_label_archive_rejected"] is True
    assert smoke["late_cuda_initialization_rejected"] is True
    assert smoke["predictions_equal"] and smoke["scores_equal"] and smoke["final_parameters_equal"]
    assert smoke["repeated_api_replay_byte_equal"] is True
    assert record["cpu_reconstruction_selftest"]["passed"] is True
    assert len(record["cpu_reconstruction_selftest"]["cases"]) == 4
    assert record["numerical_validation"]["checks"] == 212 and record["numerical_validation"]["passed"] is True
    assert record["passed"] is True
    cpu = record["hardware"]["cpu"]  # the CPU self-test and the CPU smoke ran on this CPU at these thread counts
    assert cpu["model"] and cpu["torch_num_threads"] >= 1 and record["execution"]["cpu"] == cpu
    # Platform-independent parts of the smoke metadata equal the original's.
    equal = record["original_comparison"]["equal"]
    assert equal["input_hashes"] and equal["epoch_permutation_sha256"] and equal["initial_parameter_sha256"]
    assert archive.read_json_gz(run_dir / "validate" / "validation.json.gz") == record
    assert any(f["path"] == "validate/validation.json.gz" for f in archive.read_json_gz(run_dir / "manifest.json")["files"])


@pytest.mark.gpu
def test_gpu_validate(tmp_path):
    record = validate.run_validate(tmp_path / "run", engine=SubprocessEngine(), device="cuda")
    numerical = record["numerical_validation"]
    print("checks", numerical["checks"], "max abs err", numerical["maximum_abs_error"])
    assert record["passed"] is True
    assert numerical["checks"] == ORIGINAL["numerical_validation"]["checks"] == 212
    assert numerical["maximum_abs_error"] <= 2e-5
    assert record["api_cli_smoke"]["late_cuda_initialization_rejected"] is True
    assert record["workspace"] == ":16:8"


def test_the_replay_row_names_what_ran() -> None:
    recorded = archive.read_json_gz(REPO_ROOT / "evidence" / "h200-20261202" / "validate" / "validation.json.gz")
    assert replay_label(recorded["numerical_validation"]) == "CUDA graph replay"
    assert replay_label({"device": "cpu", "captured_graphs": False}) == "CPU replay (no CUDA graphs)"


@pytest.mark.slow
def test_cpu_validate_command_names_the_cpu_replay_and_prints_no_traceback(tmp_path):
    res = CliRunner().invoke(app, ["validate", "--device", "cpu", "--out", str(tmp_path / "v1")])
    assert res.exit_code == 0, res.output
    out = res.stdout + res.stderr
    assert "CPU replay (no CUDA graphs) checks" in out and "CUDA replay" not in out, out
    assert "Traceback" not in out and "BundleError" not in out, out
    refused = [line for line in res.stderr.splitlines() if "refused as expected" in line]
    assert len(refused) == 2, res.stderr
    assert res.stdout.rstrip().endswith("runtime validation passed")
