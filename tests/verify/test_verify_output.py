"""`rev88 verify` output: the shipped archives piped through the real command read well at 80 columns.

One summary line per archive, then every FAIL and every UNAVAILABLE group (verdicts sharing a
reason) with its count and reason; the reasons arrive whole (no word broken across lines),
no line is wider than 80 columns unless it is one unbreakable token, and PASS details appear
only with --verbose.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest
from typer.testing import CliRunner

from bundle.cli import app
from tests.conftest import REPO_ROOT
from verify.registry import verify_archive
from verify.render import render_lines, unavailable_groups
from verify.result import CheckResult, Status, VerifyReport

EVIDENCE = REPO_ROOT / "evidence"
ARCHIVES = ("h200-20261202", "h200-fused-cuda-20261204e", "h200-fused-cuda-20261205", "pinned-cpu-20261201",
            "rev88-original")  # every shipped archive (evidence/INDEX.md)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, **extra}


@pytest.fixture(scope="module")
def piped():
    """`rev88 verify` (every shipped archive) with stdout a pipe, and the same verdicts as JSON: the two runs at
    once (each is mostly one core's work; CI has two)."""
    runs = [subprocess.Popen([sys.executable, "-m", "bundle.cli", "verify", *extra], cwd=REPO_ROOT, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env()) for extra in ((), ("--json",))]
    outputs = [run.communicate(timeout=600) for run in runs]
    text = subprocess.CompletedProcess(runs[0].args, runs[0].returncode, *outputs[0])
    return text, json.loads(outputs[1][0])


def _summaries(lines: list[str]) -> list[str]:
    """The archives' summary lines (not the closing total line)."""
    return [line for line in lines if not line.startswith((" ", "total (")) and " verified (" in line]


def _shared(lines: list[str]) -> dict[str, tuple[int, str]]:
    """The reasons printed once for several archives: ``"[n]"`` -> (count over all, joined entry text)."""
    out = {}
    for block in _blocks(lines):
        m = re.match(r"(\[[0-9]+\]) UNAVAILABLE \(([0-9]+) in [0-9]+ archives\)", _joined(block))
        if m:
            out[m.group(1)] = (int(m.group(2)), _joined(block))
    return out


def _blocks(lines: list[str]) -> list[list[str]]:
    """Lines grouped into entries: an entry starts with a two-space indent and a status word."""
    out: list[list[str]] = []
    for line in lines:
        if line.startswith(("  FAIL ", "  UNAVAILABLE ", "  PASS ")) or re.match(r"  \[[0-9]+\] UNAVAILABLE ", line):
            out.append([line])
        elif line.startswith("      ") and out:
            out[-1].append(line)
    return out


def _joined(block: list[str]) -> str:
    return " ".join(line.strip() for line in block)


def test_pipe_output_has_one_summary_line_per_archive_and_no_table(piped):
    res, doc = piped
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stderr == ""  # no progress bar outside a terminal
    lines = res.stdout.splitlines()
    summaries = _summaries(lines)
    assert [s.split(" (")[0] for s in summaries] == [f"evidence/{a}" for a in ARCHIVES]
    for line, archive in zip(summaries, doc["archives"], strict=True):
        c = archive["counts"]
        assert line.endswith(f"({c['PASS']} PASS, {c['FAIL']} FAIL, {c['UNAVAILABLE']} UNAVAILABLE)")
    total = {s: sum(a["counts"][s] for a in doc["archives"]) for s in ("PASS", "FAIL", "UNAVAILABLE")}
    assert re.fullmatch(rf"total \({len(ARCHIVES)} archives\): verified \({total['PASS']} PASS, 0 FAIL, "
                        rf"{total['UNAVAILABLE']} UNAVAILABLE\) in [0-9]+\.[0-9] s", lines[-1]), lines[-1]
    assert not any(ch in res.stdout for ch in "│┃━┏")
    assert not any(line.lstrip().startswith("PASS") for line in lines)  # PASS details only with --verbose


def test_every_unavailable_reason_is_shown_grouped_with_its_count(piped):
    res, doc = piped
    lines = res.stdout.splitlines()
    summaries = set(_summaries(lines))
    starts = [i for i, line in enumerate(lines) if line in summaries]
    shared = _shared(lines)
    ends = starts[1:] + [next(i for i, line in enumerate(lines) if not line.startswith(" ") and i > starts[-1])]
    over_all: Counter = Counter()
    for start, end, archive in zip(starts, ends, doc["archives"], strict=True):
        want = Counter(r["reason"] for r in archive["results"] if r["status"] == "UNAVAILABLE")
        blocks = [b for b in _blocks(lines[start + 1:end]) if b[0].startswith("  UNAVAILABLE ")]
        assert len(blocks) == len(want), archive["archive"]  # one group per distinct reason
        for block in blocks:
            text = _joined(block)
            n = int(text.split("(", 1)[1].split(")", 1)[0])
            pointer = re.search(r": see (\[[0-9]+\]) below$", text)
            entry = shared[pointer.group(1)][1] if pointer else text  # a reason of several archives: printed once
            reason = next(r for r in want if f": {r} subject" in entry or f": {r} archives: " in entry)  # whole
            assert want[reason] == n, (reason, n)
            over_all[pointer.group(1) if pointer else reason] += n
    for key, (n, entry) in shared.items():
        assert over_all[key] == n and entry.count("UNAVAILABLE") == 1, (key, n, over_all[key])
    text = " ".join(line.strip() for line in lines)
    for reason in {r["reason"] for a in doc["archives"] for r in a["results"] if r["status"] == "UNAVAILABLE"}:
        assert text.count(f": {reason} subject") + text.count(f": {reason} archives: ") == 1, reason  # printed once


def test_h200_report_reasons_say_why_and_that_the_reader_does_not_help(piped):
    res, _ = piped
    text = " ".join(line.strip() for line in res.stdout.splitlines())
    assert re.search(r"UNAVAILABLE \((8|[0-9]+ in [0-9]+ archives)\) profile.ncu_report: this repeat's .ncu-rep is "
                     "not in the archive", text)  # printed once, on its own archive or for several
    assert "with or without ncu_report installed" in text and "not stored: not stored" not in text


def test_no_line_is_wider_than_80_columns_and_no_word_is_broken(piped):
    res, doc = piped
    for line in res.stdout.splitlines():
        if len(line) > 80:
            assert len(line.split()) == 1 or not line.startswith(" "), line  # only an unbreakable token
    words = {w for a in doc["archives"] for r in a["results"] if r["status"] != "PASS" for w in r["reason"].split()}
    printed = {w for line in res.stdout.splitlines() for w in line.split()}
    assert words <= printed, sorted(words - printed)[:5]


def test_ncu_report_missing_gives_two_groups_with_their_own_reasons(monkeypatch):
    monkeypatch.setitem(sys.modules, "ncu_report", None)
    monkeypatch.delenv("COLUMNS", raising=False)
    res = CliRunner().invoke(app, ["verify", str(EVIDENCE / "h200-20261202")])
    assert res.exit_code == 0, res.output
    groups = [_joined(b) for b in _blocks(res.output.splitlines()) if b[0].startswith("  UNAVAILABLE ")
              and "profile.ncu_report" in b[0]]  # the .npz byte groups appear too where numpy is not the writer's
    assert len(groups) == 2
    assert groups[0].startswith("UNAVAILABLE (4) profile.ncu_report: ncu_report is not importable")
    assert ".venv/bin/pip install -e '.[ncu]'" in groups[0]
    assert groups[1].startswith("UNAVAILABLE (8) profile.ncu_report: this repeat's .ncu-rep is not in the archive")


def test_verbose_adds_pass_counts_and_every_subject(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    res = CliRunner().invoke(app, ["verify", str(EVIDENCE / "rev88-original"), "--verbose"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert any(line.startswith("  PASS (57) original.integrity.sha_chain") for line in lines)
    groups = unavailable_groups(verify_archive(EVIDENCE / "rev88-original"))
    reason, group = max(groups, key=lambda g: len(g[1]))
    assert len(group) > 1
    block = next(_joined(b) for b in _blocks(lines) if b[0].startswith("  UNAVAILABLE ") and reason in _joined(b))
    assert all(r.subject in block for r in group) and " more" not in block.split(reason)[1]
    assert "--verbose lists" not in res.output


def _report(reasons: list[str]) -> VerifyReport:
    rep = VerifyReport("evidence/x", "run")
    rep.extend([CheckResult("a.b", f"subject-{i}", Status.UNAVAILABLE, reason=r) for i, r in enumerate(reasons)])
    rep.extend([CheckResult("c.d", "f.json.gz", Status.FAIL, recorded=1, recomputed=2, tolerance="exact",
                            reason="value: recorded 1 but recomputed 2 " + "padding-words " * 12)])
    return rep


@pytest.mark.parametrize("width", [40, 60, 80, 120])
def test_render_wraps_at_the_width_without_breaking_words(width):
    long_reason = "the file evidence/some/very/long/path/that/cannot/be/broken.json.gz was not retained " * 2
    rep = _report([long_reason, long_reason, "short reason"])
    lines = render_lines(rep, width=width)
    assert lines[0] == "evidence/x (run): FAILED (0 PASS, 1 FAIL, 3 UNAVAILABLE)"
    for line in lines[1:]:
        assert len(line) <= width or len(line.split()) == 1, line
    blocks = _blocks(lines)
    assert [b[0].split()[0] for b in blocks] == ["FAIL", "UNAVAILABLE", "UNAVAILABLE"]
    assert _joined(blocks[1]).startswith(f"UNAVAILABLE (2) a.b: {long_reason.strip()} subjects: subject-0 and 1 more")
    assert "recorded 1; recomputed 2; tolerance exact" in _joined(blocks[0])
