"""scripts/stall_segments.py on a recorded Nsight Compute source page (the kernel shipped before, ac5da96b…, at G = 4 on
an H200, docs/measurements/fused-cuda-exchange-20261204/e-baseline-stalls) and on bad input."""

from __future__ import annotations

import csv
import gzip
import sys

import pytest

from tests.conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "scripts"))
import stall_segments  # noqa: E402

PAGE = (REPO_ROOT / "docs" / "measurements" / "fused-cuda-exchange-20261204" / "e-baseline-stalls"
        / "stalls-cuda-g4-source-sass.csv.gz")
BLOCK_STEPS = 4 * 158


def _rows() -> list[list[str]]:
    with gzip.open(PAGE, "rt", newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[1:]   # past fused_stalls.py's "Kernel Name" line


def test_the_phases_of_a_step_come_out_as_the_kernel_has_them() -> None:
    """Four forward branches of equal work, three backward phases of equal work (W3, W2, W1), each
    cut at its __syncthreads; the per-block-step counts agree with the page's totals."""
    rows = _rows()
    found = [s for s in stall_segments.segments(rows, BLOCK_STEPS) if s["instructions"] >= 50]
    sizes = [round(s["instructions"]) for s in found]
    block = [round(s["instructions"]) for s in found if s["ends_with"].startswith("BAR.SYNC")]
    forward = [n for n in block if 2500 < n < 2700]
    backward = [n for n in block if 8000 < n < 8500]
    assert any(s["ends_with"].startswith("UCGABAR") for s in found)   # the cluster barriers cut too
    assert len(forward) == 3 and len(backward) == 3, sizes   # W0's branch shares its segment with the step's start
    assert max(backward) - min(backward) <= 10 and max(forward) - min(forward) <= 10
    header = rows[0]
    col = header.index("Instructions Executed")
    total = sum(stall_segments.number(r[col]) for r in rows[1:]) / BLOCK_STEPS
    every = sum(s["instructions"] for s in stall_segments.segments(rows, BLOCK_STEPS))
    assert abs(every - total) < 1e-6 * total
    for seg in found:
        assert all(0 < share <= 1 for _, share in seg["reasons"])
        assert seg["ideal"] <= seg["wavefronts"] + 1e-9


@pytest.mark.parametrize(("args", "message"), [
    (["missing.csv", "632"], "cannot read"),
    ([str(PAGE), "0"], "not a positive number"),
    ([str(PAGE), "nan"], "not a positive number"),
    ([str(PAGE), "inf"], "not a positive number"),
    ([str(PAGE)], "usage"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, args, message) -> None:
    assert stall_segments.main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_page_without_the_counters_is_refused(tmp_path, capsys) -> None:
    other = tmp_path / "details.csv"
    other.write_text('"ID","Metric Name","Metric Value"\n"0","Duration","3.48"\n')
    assert stall_segments.main([str(other), "632"]) == 2
    assert "-source-sass.csv" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["", '"Kernel Name","rev88_train",\n', None, "bad-cell"])
def test_a_broken_page_is_one_line(tmp_path, capsys, text) -> None:
    """An empty page, a page of its first line only, a cut row and a cell that is no number: exit 2, one line."""
    rows = _rows()
    page = tmp_path / "page.csv"
    if text is None:
        body = [rows[0], rows[1][:5]]
    elif text == "bad-cell":
        bad = list(rows[1])
        bad[rows[0].index("Instructions Executed")] = "n/a"
        body = [rows[0], bad]
    else:
        page.write_text(text)
        body = None
    if body is not None:
        with page.open("w", newline="") as handle:
            csv.writer(handle).writerows(body)
    assert stall_segments.main([str(page), "632"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1
