"""`rev88 verify` over several archives: a reason they share is printed once, and one total line ends it.

Real archives (the two fused CUDA runs share their UNAVAILABLE reason) and small made-up reports
(rendering only). The JSON output keeps every verdict of every archive.
"""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from bundle.cli import app
from tests.conftest import REPO_ROOT
from verify.registry import verify_archive
from verify.render import render_json, render_text, shared_reasons, total_line
from verify.result import CheckResult, Status, VerifyReport

FUSED = [REPO_ROOT / "evidence" / name for name in ("h200-fused-cuda-20261205", "h200-fused-cuda-20261204e")]


def _report(name: str, reasons: list[str], *, passes: int = 2, fails: int = 0) -> VerifyReport:
    rep = VerifyReport(f"evidence/{name}", "run")
    rep.extend([CheckResult("a.b", f"subject-{i}", Status.UNAVAILABLE, reason=r) for i, r in enumerate(reasons)])
    rep.extend([CheckResult("c.d", f"p-{i}", Status.PASS) for i in range(passes)])
    rep.extend([CheckResult("e.f", f"f-{i}", Status.FAIL, reason="recomputed differs") for i in range(fails)])
    return rep


def _lines(reports: list[VerifyReport], **kwargs) -> list[str]:
    out: list[str] = []
    render_text(reports, out.append, **kwargs)
    return out


def test_a_shared_reason_is_printed_once_with_its_count_over_all_archives() -> None:
    reports = [_report("one", ["shared", "shared", "only one"]), _report("two", ["shared"]),
               _report("three", [], fails=1)]
    assert list(shared_reasons(reports)) == ["shared"]
    lines = _lines(reports, seconds=1.25)
    text = "\n".join(lines)
    assert text.count(": shared") == 1 and text.count(": only one") == 1
    assert "  UNAVAILABLE (2) a.b: see [1] below" in lines and "  UNAVAILABLE (1) a.b: see [1] below" in lines
    assert "  [1] UNAVAILABLE (3 in 2 archives) a.b: shared" in lines
    assert "      archives: evidence/one (2); evidence/two (1)" in lines
    assert lines[-1] == "total (3 archives): FAILED (6 PASS, 1 FAIL, 4 UNAVAILABLE) in 1.2 s"


def test_show_all_shares_nothing_and_one_archive_gets_a_total_too() -> None:
    reports = [_report("one", ["shared"]), _report("two", ["shared"])]
    lines = _lines(reports, show_all=True)
    assert sum(": shared" in line for line in lines) == 2 and not any("see [" in line for line in lines)
    assert total_line(reports[:1]) == "total (1 archive): verified (2 PASS, 0 FAIL, 1 UNAVAILABLE)"


def test_real_archives_share_their_reason_and_the_json_keeps_every_verdict() -> None:
    reports = [verify_archive(path) for path in FUSED]
    shared = shared_reasons(reports)
    assert shared, "the two fused runs should share the reason for their unstored .ncu-rep repeats"
    lines = _lines(reports, width=80)
    joined = " ".join(line.strip() for line in lines)
    for reason, entries in shared.items():
        assert joined.count(f": {reason} archives: ") == 1 and len(entries) == 2
    doc = json.loads(render_json(reports))
    verdicts = [r for a in doc["archives"] for r in a["results"]]
    counts = {s.value: sum(r["status"] == s.value for r in verdicts) for s in Status}
    assert lines[-1] == total_line(reports)
    assert lines[-1] == (f"total (2 archives): verified ({counts['PASS']} PASS, {counts['FAIL']} FAIL, "
                         f"{counts['UNAVAILABLE']} UNAVAILABLE)")
    assert len(verdicts) == sum(len(r.results) for r in reports)  # --json: every verdict, shared or not
    assert sum(r["reason"] in shared for r in verdicts) == sum(len(g) for e in shared.values() for _, g in e)


def test_the_command_ends_with_the_total_line_and_its_seconds() -> None:
    res = CliRunner().invoke(app, ["verify", *map(str, FUSED)])
    assert res.exit_code == 0, res.output
    last = res.output.splitlines()[-1]
    assert re.fullmatch(r"total \(2 archives\): verified \([0-9]+ PASS, 0 FAIL, [0-9]+ UNAVAILABLE\) in [0-9.]+ s", last)
