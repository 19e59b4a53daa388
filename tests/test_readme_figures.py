"""The README's headline table is re-derived from the verifier's own output.

Each row names a figure, the archive under ``evidence/``, a check id (optionally ``→ key.path`` into the
check's recomputed value) and the subject of that check. The test verifies each archive once, finds the
PASS verdict with that id and subject, and formats its recomputed value the way the row prints it (the
figure's own number of decimals; ``mean [low, high]`` for a summary, ``ratio [low, high]`` for a ratio;
``yes`` for true; thousands separators for integers; a ``(GB)`` claim divides bytes by 10⁹). A figure
that no longer follows from the shipped evidence fails here, so the README cannot go stale silently.
"""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- headline-table: begin -->", "<!-- headline-table: end -->"


def _rows() -> list[dict[str, str]]:
    """The table's rows as dicts (claim, figure, archive, check, subject); at least one, or the test fails."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert BEGIN in text and END in text, "README.md lost its headline-table markers"
    body = text.split(BEGIN, 1)[1].split(END, 1)[0]
    rows = []
    for line in body.strip().splitlines()[2:]:  # header and rule
        cells = [c.strip().strip("`").strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 5, f"headline row does not have 5 cells: {line}"
        rows.append(dict(zip(("claim", "figure", "archive", "check", "subject"), cells, strict=True)))
    assert rows, "the headline table has no rows"
    return rows


@cache
def _verdicts(archive: str) -> dict[tuple[str, str], list]:
    """(check id, subject) -> the verdicts ``verify_archive`` gives for ``evidence/<archive>``."""
    from verify.registry import verify_archive  # noqa: PLC0415

    out: dict[tuple[str, str], list] = {}
    for r in verify_archive(REPO / "evidence" / archive).results:
        out.setdefault((r.check_id, r.subject), []).append(r)
    return out


def _decimals(number: str) -> int:
    return len(number.split(".", 1)[1]) if "." in number else 0


def _fmt(value: float, like: str) -> str:
    """*value* printed as the README prints *like* (same decimals, thousands separators)."""
    return f"{value:,.{_decimals(like)}f}"


def render(value: object, figure: str, claim: str) -> str:
    """How the README row prints the recomputed *value*, following *figure*'s own format."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    scale = 1e9 if "(GB" in claim else 1.0
    numbers = re.findall(r"[0-9][0-9,]*(?:\.[0-9]+)?", figure)
    if isinstance(value, dict):
        centre = value["mean"] if "mean" in value else value["ratio"]
        if len(numbers) == 3:
            parts = [_fmt(v / scale, n) for v, n in zip((centre, value["ci95_low"], value["ci95_high"]), numbers,
                                                        strict=True)]
            return f"{parts[0]} [{parts[1]}, {parts[2]}]"
        return _fmt(centre / scale, numbers[0])
    assert isinstance(value, int | float), f"cannot render {value!r}"
    return _fmt(value / scale, numbers[0])


@pytest.mark.parametrize("row", _rows(), ids=lambda row: row["claim"])
def test_headline_figure_follows_from_the_archive(row: dict[str, str]) -> None:
    check, _, path = (part.strip() for part in row["check"].partition("→"))
    path = path.strip("`").strip()
    verdicts = _verdicts(row["archive"]).get((check.strip("`").strip(), row["subject"]))
    assert verdicts, f"{row['archive']}: no verdict {check} for subject {row['subject']!r}"
    assert {v.status.value for v in verdicts} == {"PASS"}, f"{check} {row['subject']}: {verdicts}"
    value = verdicts[0].recomputed
    for key in filter(None, path.split(".")):
        value = value[key]
    assert render(value, row["figure"], row["claim"]) == row["figure"], row["claim"]


def test_render_follows_the_figures_format() -> None:
    """The formatter itself: decimals, separators, intervals, scaling (so a wrong row cannot pass by luck)."""
    assert render(98208, "98,208", "x") == "98,208"
    assert render(78.6875, "78.69", "x") == "78.69"
    assert render({"mean": 318.6127, "ci95_low": 317.69, "ci95_high": 319.53}, "318.6 [317.7, 319.5]", "x") \
        == "318.6 [317.7, 319.5]"
    assert render({"ratio": 0.77664, "ci95_low": 0.77194, "ci95_high": 0.78136}, "0.777 [0.772, 0.781]", "x") \
        == "0.777 [0.772, 0.781]"
    assert render(2926358128.7, "2.926", "bytes (GB, mean)") == "2.926"
    assert render(True, "yes", "x") == "yes"
    assert render(318.7, "318.6", "x") != "318.6"


def test_readme_is_a_map() -> None:
    """The README stays a map: at most 150 lines, and every relative link in it names a file of the tree."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    for target in re.findall(r"\]\(([^)#:]+)\)", text):
        assert (REPO / target).exists(), f"README links to {target}, which is not in the tree"
