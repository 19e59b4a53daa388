"""The leaf-coverage tool on a sample of leaves of both shipped archives, and the attestation registry's
documentation (so neither can rot)."""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from bundle.cli import app
from tests.conftest import H200_ARCHIVE, REPO_ROOT, load_script
from verify import coverage

REAL = H200_ARCHIVE
ORIGINAL = REPO_ROOT / "evidence" / "rev88-original"
pytestmark = pytest.mark.skipif(not REAL.is_dir() or not ORIGINAL.is_dir(), reason="the shipped archives are absent")


@pytest.fixture(scope="module")
def tool():
    return load_script("leaf_coverage")


@pytest.fixture(scope="module")
def run_harness(tool):
    saved = sys.modules.get("ncu_report")
    sys.modules["ncu_report"] = None  # keep the sample fast: the stored reports are raw sources, never mutated
    try:
        yield tool.Harness(REAL)
    finally:
        if saved is None:
            sys.modules.pop("ncu_report", None)
        else:
            sys.modules["ncu_report"] = saved


@pytest.mark.parametrize("kind,sample", [("cache-audit/summary.json", 12), ("cache-audit/cuda-validation.json", 8),
                                         ("results/draw-NN.json", 8)])
def test_sample_of_original_leaves_is_never_missed(tool, kind, sample):
    res = tool.run_coverage(ORIGINAL, kinds=kind, sample=sample, seed=1)
    counts = res["kinds"][kind]
    assert res["baseline_fails"] == []
    assert counts["missed"] == 0, [m for m in res["mutations"] if m["outcome"] == "missed"]
    assert counts["detected"] + counts["attested"] == counts["leaves"] == sample


@pytest.mark.parametrize("kind", ["energy/trial-rNN-workspace-W.json.gz", "profile/workspace-W-S-rNN.json.gz",
                                  "qualify/draw-NN.json.gz", "validate/validation.json.gz", "environment.json.gz"])
def test_sample_of_run_leaves_is_never_missed(tool, run_harness, kind):
    points = run_harness.points(kind, run_harness.kinds()[kind])
    picked = points[:: max(1, len(points) // 6)][:6]
    outcomes = [run_harness.mutate(rel, point) for rel, point in picked]
    assert not [m for m in outcomes if m.outcome == "missed"], outcomes
    assert all(m.outcome in ("detected", "attested") for m in outcomes)


def test_the_rebuild_is_consistent_so_an_attested_leaf_fails_nothing(run_harness):
    # A changed record's sha256 is recorded in interleaved.json.gz and the manifest: both follow the change,
    # so changing an attested leaf fails no check at all (nothing but the rebuild touched the archive).
    m = run_harness.mutate("energy/trial-r01-workspace-16-8.json.gz", "energy.trials.0.active.end.query_latency_s")
    assert m.outcome == "attested" and m.checks == []


def test_a_telemetry_reading_is_detected_by_its_nvml_log(run_harness):
    m = run_harness.mutate("energy/trial-r02-workspace-0-0.json.gz", "energy.trials.0.telemetry_after.power_w")
    assert m.outcome == "detected" and "energy.nvml_log.telemetry" in m.checks


def test_table_lines_count_every_kind(tool):
    res = {"archive": "a", "layout": "run", "kinds": {"k": {"records": 1, "leaves": 3, "detected": 2, "attested": 1,
                                                            "missed": 0}}}
    lines = tool.table(res)
    assert lines[-1].split()[-5:] == ["1", "3", "2", "1", "0"]


def test_docs_list_the_registry_verbatim():
    text = (REPO_ROOT / "docs" / "verifier-coverage.md").read_text(encoding="utf-8")
    begin, end = "<!-- attestations:begin -->\n", "\n<!-- attestations:end -->"
    assert begin in text and end in text
    assert text.split(begin)[1].split(end)[0] == "\n".join(coverage.markdown_lines())


def test_verify_explain_prints_every_attestation():
    result = CliRunner().invoke(app, ["verify", "--explain"])
    assert result.exit_code == 0, result.output
    for a in coverage.ATTESTATIONS:
        assert f"{a.records} :: {a.field}" in result.output
        assert a.reason in result.output


def test_field_globs():
    m = coverage.field_matches
    assert m("**.scope", "scope") and m("**.scope", "energy.scope") and not m("**.scope", "energy.scopes")
    assert m("a.*.c", "a.0.c") and not m("a.*.c", "a.0.1.c")
    assert m("source_sha256.**", "source_sha256.fixture.py")
    assert coverage.record_kind("energy/trial-r02-workspace-16-8.json.gz") == "energy/trial-rNN-workspace-W.json.gz"
    assert coverage.attestation_for("run", "qualify/draw-03.json.gz", "fixture.record_sha256") is not None
    assert coverage.attestation_for("run", "qualify/draw-03.json.gz", "fixture.fresh_process") is None
