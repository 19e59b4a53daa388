"""Quiet GPU work: torch's known warnings go into the job's record once; tables turn into lists when narrow."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from rich.console import Console

from bundle import archive
from bundle.commands.console import DelayedProgress, print_table
from bundle.fixture import KNOWN_WARNINGS, WarningCapture
from tests.conftest import RECORDED

#: The warning as torch 2.11 printed it on the H200 under :16:8 (tests/recorded/ncu/h200-fixture-training-16-8.csv).
CUBLASLT = next(line.split("UserWarning: ", 1)[1] for line in
                (RECORDED / "ncu" / "h200-fixture-training-16-8.csv").read_text().splitlines() if "CUBLASLT" in line)


def test_the_recorded_cublaslt_warning_is_known():
    assert any(pattern.search(CUBLASLT) for _, pattern, _ in KNOWN_WARNINGS)


def test_known_warnings_are_recorded_once_and_not_printed(capsys):
    with WarningCapture() as captured:
        for _ in range(3):
            warnings.warn(CUBLASLT, UserWarning, stacklevel=1)
        summary = captured.summary()
    assert capsys.readouterr().err == ""
    assert len(summary) == 1
    entry = summary[0]
    assert entry["name"] == "cublaslt_workspace_cap" and entry["count"] == 3 and entry["category"] == "UserWarning"
    assert entry["message"] == CUBLASLT and "128 KiB" in entry["meaning"]
    assert entry["source"].startswith("test_console.py:")


def test_unknown_warnings_are_recorded_and_printed_once(monkeypatch):
    shown = []
    monkeypatch.setattr(warnings, "showwarning", lambda message, *args, **kwargs: shown.append(str(message)))
    with WarningCapture() as captured:
        for _ in range(2):
            warnings.warn("something new from a library", RuntimeWarning, stacklevel=1)
            warnings.warn(CUBLASLT, UserWarning, stacklevel=1)
        summary = captured.summary()[:1]
    assert shown == ["something new from a library"]  # once, and the known one not at all
    assert summary == [{"name": None, "category": "RuntimeWarning", "message": "something new from a library",
                        "source": summary[0]["source"], "count": 2, "meaning": None}]


def test_the_fixture_record_carries_its_warnings(tmp_path, monkeypatch):
    """A CPU fixture run in this process: its record has the (here empty) ``warnings`` list."""
    pytest.importorskip("torch")
    from bundle import fixture
    from bundle.phases.fixture_runner import write_fixture_inputs
    from bundle.phases.validate import SMOKE_CONFIG, smoke_inputs

    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    monkeypatch.setattr(fixture, "WORKSPACE_AT_IMPORT", ":16:8")
    npz, cfg = write_fixture_inputs(tmp_path, smoke_inputs(), SMOKE_CONFIG)
    out = tmp_path / "record.json.gz"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing may leak out of the capture
        fixture.run_fixture(npz, cfg, out, mode="measure", device="cpu")
    record = archive.read_json_gz(out)
    assert isinstance(record["warnings"], list)
    assert all(set(w) == {"name", "category", "message", "source", "count", "meaning"} for w in record["warnings"])
    assert np.load(fixture.predictions_path_for(out)).shape == (7,)


ROWS = [("interleaved :4096:8", "3", "417.77", "5.04", "1.2", "[405.3, 430.3]", "-", "40.230"),
        ("interleaved :16:8", "3", "335.57", "0.56", "0.2", "[334.2, 337.0]", "0.8032 [0.7803, 0.8275]", "50.783")]
COLUMNS = ("protocol, workspace", "n", "mJ/task mean", "SD", "rel SD %", "95 % CI", "ratio vs :4096:8", "CUDA ms/task")


def _printed(width: int) -> str:
    buffer = io.StringIO()
    print_table(Console(file=buffer, width=width), "idle-adjusted energy, draw 0", COLUMNS, ROWS)
    return buffer.getvalue()


def test_a_table_that_fits_is_a_table():
    text = _printed(200)
    assert "┃" in text and "ratio vs :4096:8" in text and "…" not in text


@pytest.mark.parametrize("width", [60, 80])
def test_a_narrow_table_becomes_a_list_with_every_cell_whole(width):
    text = _printed(width)
    assert "…" not in text and "┃" not in text
    for row in ROWS:
        assert f"- {row[0]}" in text
        for column, cell in zip(COLUMNS[1:], row[1:], strict=True):
            assert f"    {column}: {cell}" in text
    assert all(len(line) <= width for line in text.splitlines())


def test_delayed_progress_draws_nothing_off_a_terminal():
    buffer = io.StringIO()
    with DelayedProgress("work", total=2, delay_s=0.0, console=Console(file=buffer)) as progress:
        progress.update("step 1", advance=1)
        progress.update("step 2", advance=1)
    assert buffer.getvalue() == ""
