"""A profile run's console output (``<run>.ncu-output.txt.gz``) against its CSV and its fixture record.

The profile phase keeps ncu's whole stdout + stderr next to the CSV it parsed. The CSV must
be exactly the lines of that output that start with a double quote (what
:func:`protocol.ncu.csv_lines` extracts; spec 6.3), so a CSV rewritten with other counts while
the output still prints the measured ones fails here, for every run, whether or not its
``.ncu-rep`` was stored. The fixture prints one line per replay pass
(``fixture profile/<scope> <workspace>: peak allocated <N> B, predictions <sha>``): each must
name the run's scope and workspace, the fixture record's peak and its predictions hash, and
there must be one per replay pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from protocol import ncu as counters
from verify.integrity import ArchiveFiles
from verify.records import get, get_str
from verify.result import CheckResult, check_equal, failed

FIXTURE_LINE = re.compile(r"^fixture (?P<mode>\w+)/(?P<scope>\w+) (?P<ws>\S+): peak allocated (?P<peak>\d+) B, "
                          r"predictions (?P<sha>[0-9a-f]{64})$")


def check_output(f: ArchiveFiles, rel: str, rec: Mapping[str, Any], csv_text: str, fixture: Mapping[str, Any] | None,
                 passes: list[int], subject: str) -> list[CheckResult]:
    """The run's ncu output vs its CSV (byte for byte) and vs its fixture record (one line per pass)."""
    out_rel = f"profile/{get_str(rec, 'files.ncu_output.path', rel)}"
    if not f.has(out_rel):
        return [failed("profile.ncu_output", subject, f"{out_rel} named by files.ncu_output is not in the archive")]
    text = f.read(out_rel).decode("utf-8", errors="replace")
    lines = counters.csv_lines(text)
    out = [check_equal("profile.ncu_output.csv", subject, csv_text, "\n".join(lines) + "\n" if lines else "",
                       what=f"the CSV vs the quoted lines of {out_rel}")]
    if fixture is None:
        return out
    md_sha = get(fixture, "metadata.predictions_sha256", str, rel)
    peak = get(fixture, "memory.prepare_and_invoke_peak_allocated_bytes", int, rel)
    printed = [m.groupdict() for line in text.splitlines() if (m := FIXTURE_LINE.match(line))]
    want = {"mode": "profile", "scope": get_str(rec, "scope", rel), "ws": get_str(rec, "workspace_config", rel),
            "peak": str(peak), "sha": md_sha}
    out.append(check_equal("profile.ncu_output.fixture", subject, printed, [want] * (sum(passes) if passes else 1),
                           what=f"the fixture's line per replay pass in {out_rel} vs the fixture record"))
    return out
