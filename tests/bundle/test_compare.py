"""Tests for bundle.phases.compare: figures from the original records, CPU end to end, resume; GPU run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bundle import archive
from bundle.jobs import JobResult, JobSpec, SubprocessEngine
from bundle.phases import compare
from bundle.phases.validate import SMOKE_CONFIG, smoke_inputs
from protocol.errors import BundleError
from tests.conftest import ORIGINAL_ARCHIVE

CACHE = ORIGINAL_ARCHIVE / "cache-audit"


def _original(name: str) -> dict:
    return json.loads((CACHE / f"{name}.json").read_text())["result"]


def test_reductions_reproduce_the_original_summary():
    summary = json.loads((CACHE / "summary.json").read_text())
    base = _original("baseline")["memory"]["prepare_and_invoke_peak_allocated_bytes"]
    for name in ("small-workspace", "zero-workspace"):
        peak = _original(name)["memory"]["prepare_and_invoke_peak_allocated_bytes"]
        got = compare.reduction(base, peak)
        want = summary["reductions"][name]
        for key in ("peak_allocated_bytes_saved", "peak_allocated_reduction_percent",
                    "peak_allocated_ratio_to_baseline"):
            assert got[key] == want[key], (name, key)
    assert compare.reduction(82_509_824, 15_663_104)["peak_allocated_mib_saved"] == 63.75


def test_memory_figures_and_audit_on_original_records():
    small = _original("small-workspace")
    figures = compare.memory_figures(small)
    assert figures["peak_allocated_bytes"] == 15_663_104 and figures["peak_allocated_mib"] == 14.9375
    assert figures["named_storage_bytes"] == 13_960_864 and figures["unnamed_live_allocated_bytes"] == 276_832
    for name in ("baseline", "small-workspace", "zero-workspace"):
        audit = compare.memory_audit(_original(name))
        assert audit["passed"], (name, audit)
    broken = json.loads(json.dumps(small))
    broken["memory"]["allocated_before_prepare_bytes"] = 67_108_864
    audit = compare.memory_audit(broken)
    assert not audit["passed"] and not audit["checks"]["entry_allocated_and_reserved_zero"]


def test_original_state_field_differences():
    base = _original("baseline")["metadata"]
    small = _original("small-workspace")["metadata"]
    assert compare.differing_fields(base, small) == [
        "final_parameter_sha256", "final_velocity_sha256", "state_vector_sha256", "scores_sha256"]
    frozen = compare.frozen_reference(0)
    assert frozen["metadata"]["predictions_sha256"] == small["predictions_sha256"]
    assert compare.differing_fields(frozen["metadata"], base) == []


class CountingEngine:
    """A real SubprocessEngine that counts jobs and can fail one by name."""

    kind = "native"
    image_reference = None

    def __init__(self, fail_on: str | None = None) -> None:
        self.inner = SubprocessEngine()
        self.names: list[str] = []
        self.fail_on = fail_on

    def run(self, spec: JobSpec, *, on_line=None) -> JobResult:
        self.names.append(spec.name)
        if spec.name == self.fail_on:
            return JobResult(spec.name, 1, "", "simulated crash of the fixture\n", 0.0)
        return self.inner.run(spec, on_line=on_line)


@pytest.mark.slow
def test_cpu_compare_end_to_end_with_crash_and_resume(tmp_path):
    run_dir = tmp_path / "run"
    crashing = CountingEngine(fail_on="compare/workspace-0-0")
    with pytest.raises(BundleError, match="simulated crash"):
        compare.run_compare(run_dir, engine=crashing, device="cpu", inputs=smoke_inputs(), config=SMOKE_CONFIG)
    staged = run_dir / ".staging" / "compare"
    assert (staged / "workspace-4096-8.json.gz").is_file() and (staged / "workspace-16-8.json.gz").is_file()
    assert not (run_dir / "compare").exists() and not (run_dir / "manifest.json").exists()
    engine = CountingEngine()
    result = compare.run_compare(run_dir, engine=engine, device="cpu", inputs=smoke_inputs(), config=SMOKE_CONFIG)
    assert engine.names == ["compare/workspace-0-0"]  # the two finished jobs were kept
    assert [c["workspace"] for c in result["configs"]] == [":4096:8", ":16:8", ":0:0"]
    assert result["predictions_bit_equal_across_configs"] is True
    assert result["frozen_reference"] is None and result["reductions_vs_baseline"] == {}
    stored = archive.read_json_gz(run_dir / "compare" / "comparison.json.gz")
    assert stored["configs"] == result["configs"]
    for cfg in result["configs"]:
        rec = archive.read_json_gz(run_dir / "compare" / cfg["record"])
        assert rec["cublas_workspace_config"] == cfg["workspace"]
        assert cfg["record_sha256"] == archive.file_sha256(run_dir / "compare" / cfg["record"])
    manifest = archive.read_json_gz(run_dir / "manifest.json")
    paths = [f["path"] for f in manifest["files"]]
    assert "compare/comparison.json.gz" in paths and "compare/config.json" in paths
    assert "compare/input.npz" not in paths  # derived copy, kept in RUN_DIR/.work only
    assert "environment.json.gz" in paths
    with pytest.raises(BundleError, match="already complete"):
        compare.run_compare(run_dir, engine=engine, device="cpu", inputs=smoke_inputs(), config=SMOKE_CONFIG)


@pytest.mark.gpu
def test_gpu_compare_draw0_end_to_end(tmp_path):
    result = compare.run_compare(tmp_path / "run", engine=SubprocessEngine(), draw_index=0)
    for cfg in result["configs"]:
        print(cfg["workspace"], cfg["memory"], cfg["first_invocation_cuda_ms"])
        assert cfg["memory_audit"]["passed"], cfg["memory_audit"]
        assert cfg["memory"]["named_storage_bytes"] == 13_960_864
    print("reductions", result["reductions_vs_baseline"], "differ", result["state_fields_differing_from_baseline"])
    assert result["predictions_bit_equal_across_configs"] is True
    assert result["predictions_bit_equal_to_frozen_reference"] is True
    small = result["reductions_vs_baseline"][":16:8"]
    assert small["peak_allocated_bytes_saved"] > 0 and 0 < small["peak_allocated_ratio_to_baseline"] < 1
    preds = np.load(tmp_path / "run" / "compare" / "workspace-16-8.predictions.npy", allow_pickle=False)
    assert preds.shape == (10_000,) and preds.dtype == np.int64
    # the next process was pre-started: each took the board lock in its turn, after the one before exited
    locks = [archive.read_json_gz(tmp_path / "run" / "compare" / cfg["record"])["placement"]["gpu_lock"]
             for cfg in result["configs"]]
    assert [lock["ticket"] for lock in locks] == [0, 1, 2] and all(lock["scope"] == "process" for lock in locks)
    assert locks[1]["waited_s"] > 0 and locks[2]["waited_s"] > 0
