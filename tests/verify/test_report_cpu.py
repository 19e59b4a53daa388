"""`rev88 report` on a real CPU qualification archive: a CPU run is labelled a CPU run.

The archive is made here by `rev88 qualify --device cpu` (all 11 draws, ~25 s on two idle
cores); the report must name the CPU from the archive's own records, show the phases the
archive does not hold as "not run", use one number format, and list every file it wrote.
"""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from bundle.cli import app
from tests.conftest import ORIGINAL_ARCHIVE

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cpu_archive(tmp_path_factory):
    pytest.importorskip("torch")
    run_dir = tmp_path_factory.mktemp("cpu-qualify") / "run"
    res = CliRunner().invoke(app, ["qualify", "--device", "cpu", "--out", str(run_dir)])
    assert res.exit_code == 0, res.output
    return run_dir


@pytest.fixture(scope="module")
def report(cpu_archive, tmp_path_factory):
    pytest.importorskip("matplotlib")
    out = tmp_path_factory.mktemp("cpu-report")
    (out / "energy.png").write_bytes(b"stale figure of an earlier report")
    res = CliRunner().invoke(app, ["report", str(cpu_archive), "--out", str(out), "--original", str(ORIGINAL_ARCHIVE)])
    assert res.exit_code == 0, res.output
    return out, res.output, (out / "REPORT.md").read_text(encoding="utf-8")


def test_the_report_lists_every_file_it_wrote(report):
    out, output, _ = report
    assert output.splitlines() == [f"wrote {out / 'REPORT.md'}", f"wrote {out / 'accuracy.png'}"]
    assert sorted(p.name for p in out.iterdir()) == ["REPORT.md", "accuracy.png"]  # the stale figure is gone
    assert (out / "accuracy.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_cpu_run_is_labelled_cpu(report):
    _, _, md = report
    assert "H200" not in md and "None" not in md and "False" not in md and "True" not in md
    import torch  # noqa: PLC0415 - the archive was made by this torch

    build = "CPU build" if torch.version.cuda is None else f"CUDA {torch.version.cuda} build, run on the CPU"
    assert re.search(r"\| qualify \| CPU .*\| none \| native \| torch [^|]*\(" + re.escape(build) + r"\)", md), md
    assert "| draw | this run, CPU: correct of 10,000 | this run, CPU: % | A100 original (frozen): % |" in md
    assert "| 8 | 8,950 | 89.50 | 89.50 | yes |" in md
    assert "Aggregate: 98,208 of 110,000 correct (89.28 %); the 12 % error target needs 96,800 of 110,000: meets." in md


def test_phases_not_run_read_not_run(report):
    _, _, md = report
    for phase in ("validate", "compare", "energy", "profile"):
        assert f"| {phase} | not run | — |" in md
    assert "| qualify | yes | CPU |" in md
    assert "| `:16:8` | not run | not run | 15,663,104 | 14.94 |" in md
    assert "| replay checks | not run |" in md
    assert "| `:4096:8` task | not run | 4,914,392 | not run | 1,423,249,148 |" in md
    assert "| not verified" not in md and "not verified |" not in md
    assert "![accuracy.png](accuracy.png)" in md and "peak_memory.png" not in md
