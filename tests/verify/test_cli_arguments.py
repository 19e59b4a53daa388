"""`rev88 verify` / `rev88 report` argument handling through the real CLI: a file instead of an
archive folder, a report folder inside the archive, ``--explain --json``, and help text that
typer wraps cleanly at 80 columns."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from bundle.cli import app
from tests.conftest import REPO_ROOT, linked_copy
from verify.coverage import ATTESTATIONS

EVIDENCE = REPO_ROOT / "evidence"
H200 = EVIDENCE / "h200-20261202"


def _files(root):
    return sorted(p.relative_to(root) for p in root.rglob("*"))


def test_verify_of_a_file_names_the_archive_folder_that_holds_it():
    res = CliRunner().invoke(app, ["verify", str(H200 / "manifest.json")])
    assert res.exit_code == 2, res.output
    assert res.stdout == ""
    assert res.stderr == (f"rev88: error: {H200 / 'manifest.json'} is a file, not an archive folder: pass the "
                          f"archive folder that holds it (rev88 verify {H200})\n")



def test_verify_of_a_file_deeper_in_an_archive_names_the_archive_root(tmp_path):
    deep = H200 / "qualify" / "draw-03.json.gz"
    assert deep.is_file()
    res = CliRunner().invoke(app, ["verify", str(deep)])
    assert res.exit_code == 2, res.output
    assert res.stderr.endswith(f"pass the archive folder that holds it (rev88 verify {H200})\n")
    loose = tmp_path / "notes.txt"  # a file in no archive: no folder above it holds manifest.json
    loose.write_text("x\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["verify", str(loose)])
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and "the one that holds manifest.json" in res.stderr


def test_report_of_a_missing_archive_says_so_first(tmp_path):
    res = CliRunner().invoke(app, ["report", str(tmp_path / "nope"), "--out", str(tmp_path / "r")])
    assert res.exit_code == 2, res.output
    assert res.stderr == (f"rev88: error: {tmp_path / 'nope'} is not a folder: pass a run archive folder "
                          "(evidence/<run-id>, the one that holds manifest.json)\n")
    assert not (tmp_path / "r").exists()

@pytest.mark.parametrize("inside", [".", "figures", "qualify/figures", "link/figures"])
def test_report_into_the_archive_is_refused_before_anything_is_written(tmp_path, inside):
    archive = linked_copy(H200, tmp_path)
    before = _files(archive)
    (tmp_path / "link").symlink_to(archive)  # a path that reaches into the archive through a link
    out = archive / inside if not inside.startswith("link") else tmp_path / inside
    res = CliRunner().invoke(app, ["report", str(archive), "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and res.stderr.startswith(f"rev88: error: --out {out} ")
    assert f"the archive {archive}: the report would be written into the evidence" in res.stderr
    assert _files(archive) == before  # no REPORT.md, no PNG, no folder


def test_explain_json_is_the_attestation_registry():
    res = CliRunner().invoke(app, ["verify", "--explain", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc == [{"layout": a.layout, "records": a.records, "field": a.field, "reason": a.reason}
                   for a in ATTESTATIONS]
    assert {e["layout"] for e in doc} == {"*", "run", "original"}


@pytest.mark.parametrize("command", ["verify", "report"])
def test_help_prose_wraps_only_where_the_next_word_does_not_fit(command):
    env = {k: v for k, v in os.environ.items() if k not in ("LINES",)}
    env["COLUMNS"] = "80"
    res = subprocess.run([sys.executable, "-m", "bundle.cli", command, "--help"], cwd=REPO_ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    prose = lines[[i for i, line in enumerate(lines) if "Usage:" in line][0] + 1:
                  [i for i, line in enumerate(lines) if line.startswith("╭")][0]]
    assert all(len(line) <= 80 for line in prose)
    text_width = 78  # rich pads the help text by one column on each side
    paragraphs, current = [], []
    for line in prose:
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(current)
            current = []
    assert len(paragraphs) == 2, prose
    for paragraph in paragraphs:
        for line, following in zip(paragraph, paragraph[1:], strict=False):
            assert len(line) + 1 + len(following.split()[0]) > text_width, (line, following)


@pytest.mark.parametrize("args", [["data", "fetch", "--dest"], ["data", "check", "--raw-dir"]])
def test_data_commands_refuse_a_file_for_a_folder_in_one_line(tmp_path, args):
    afile = tmp_path / "afile.txt"
    afile.write_text("x\n", encoding="utf-8")
    res = CliRunner().invoke(app, [*args, str(afile)])
    assert res.exit_code == 2, res.output
    assert res.stdout == ""
    assert res.stderr == f"rev88: error: {args[2]} {afile} is a file, not a folder: " + (
        "give the folder to download the raw files into\n" if args[1] == "fetch"
        else "give the folder that holds the four MNIST .gz files\n")


def test_a_file_system_error_is_one_line_naming_the_path(tmp_path):
    """An OSError from a command (here: a folder asked for below a file) is one line and exit 2, no traceback."""
    afile = tmp_path / "afile.txt"
    afile.write_text("x\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["data", "fetch", "--dest", str(afile / "raw"), "--mirror", "file:///nonexistent"])
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("rev88: error: ") and str(afile) in res.stderr
    assert "Traceback" not in res.output


def test_verify_into_a_closed_pipe_exits_141_not_1():
    """`rev88 verify … | head -1`: the reader goes away; the status is 141 (SIGPIPE), never the FAIL status 1.
    (`true` reads nothing and exits at once; the verifier writes only after a second of checks.)"""
    archive = EVIDENCE / "pinned-cpu-20261201"  # the smallest archive: about a second
    proc = subprocess.run(f"{sys.executable} -m bundle.cli verify --verbose {archive} | true; "
                          "echo ${PIPESTATUS[0]}", shell=True, executable="/bin/bash", cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.stdout.strip() == "141", (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(("exc", "one_line"), [
    (PermissionError(13, "Permission denied", "/some/raw/file.gz"), True),
    (FileNotFoundError(2, "No such file or directory", "/some/missing"), True),
    (OSError(28, "No space left on device"), False),  # not about a path a user gave: propagates
    (OSError("libtorch_cuda.so: undefined symbol: x"), False),
    (FileNotFoundError(2, "No such file or directory"), False),  # names no path
])
def test_only_errors_about_a_named_path_become_one_line(capsys, exc, one_line):
    import typer  # noqa: PLC0415

    from bundle.commands import one_line_errors  # noqa: PLC0415

    @one_line_errors
    def command() -> None:
        raise exc

    if one_line:
        with pytest.raises(typer.Exit):
            command()
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and exc.filename in err and err.startswith("rev88: error: ")
    else:
        with pytest.raises(type(exc)):
            command()


@pytest.mark.parametrize(("extra", "expected"), [
    (["--boards", "GPU-00000000-0000-0000-0000-000000000000"], "drop it, or pass --fresh-process"),
    (["--fresh-process", "--boards", ""], "give at least one board UUID"),
])
def test_qualify_boards_without_fresh_processes_or_empty_is_refused(tmp_path, extra, expected):
    """--boards only places fresh-process draws: ignored in process it would be a silent no-op."""
    pytest.importorskip("torch")
    res = CliRunner().invoke(app, ["qualify", "--device", "cpu", "--out", str(tmp_path / "q"), "--draws", "0", *extra])
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and expected in res.stderr
    assert not (tmp_path / "q").exists()
