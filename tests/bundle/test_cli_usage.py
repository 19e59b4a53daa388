"""`rev88` command-line mistakes: one stderr line and exit 2, through the console-script entry point.

(Typer's test runner calls the app without :func:`bundle.cli.main`, which makes the line; these tests
call ``main`` itself, as the ``rev88`` script does.)
"""

from __future__ import annotations

import pytest

from bundle import cli


def _main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.argv", ["rev88", *args])
    with pytest.raises(SystemExit) as info:
        cli.main()
    out, err = capsys.readouterr()
    return info.value.code, out, err


@pytest.mark.parametrize(("args", "where", "what"), [
    (["verify", "--bogus"], "rev88 verify", "No such option: --bogus"),
    (["nonsense"], "rev88", "No such command 'nonsense'"),
    (["qualify", "--device"], "rev88 qualify", "Option '--device' requires an argument"),
    (["reproduce"], "rev88 reproduce", "Missing option '--out'"),
    (["qualify", "--jobs", "x", "--out", "run"], "rev88 qualify", "Invalid value for '--jobs'"),
    (["verify", "--json", "--json=1"], "rev88 verify", "--json"),
])
def test_a_usage_error_is_one_line_and_exit_2(monkeypatch, capsys, tmp_path, args, where, what) -> None:
    monkeypatch.chdir(tmp_path)  # nothing may be written, and nothing is found here
    code, out, err = _main(monkeypatch, capsys, *args)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1, err
    line = err.rstrip("\n")
    assert line.startswith(f"{where}: error: ") and what in line and line.endswith(f"(try '{where} --help')"), line
    assert not any(box in err for box in "╭│╰"), err
    assert list(tmp_path.iterdir()) == []


def test_help_still_prints_the_usage(monkeypatch, capsys) -> None:
    code, out, _ = _main(monkeypatch, capsys, "verify", "--help")
    assert code == 0 and "rev88 verify [OPTIONS]" in out and "--json" in out
    code, out, err = _main(monkeypatch, capsys, "--help")
    assert code == 0 and "reproduce" in out and "verify" in out


def test_rev88_alone_prints_the_help(monkeypatch, capsys) -> None:
    code, out, err = _main(monkeypatch, capsys)
    assert code == 2 and "Usage: rev88" in out + err and "error:" not in out + err


def test_a_command_that_succeeds_exits_0(monkeypatch, capsys) -> None:
    code, out, _ = _main(monkeypatch, capsys, "verify", "--explain")
    assert code == 0 and out.strip()
