"""Which recorded spans overlap (the verifier's own rule)."""

from __future__ import annotations

from collections.abc import Mapping


def overlaps(spans: Mapping[int, tuple[float, float]]) -> dict[int, list[int]]:
    """For each key, the other keys whose open span (start, end) meets its own (times on one clock, s).

    Two spans [s1, e1) and [s2, e2) overlap when s2 < e1 and s1 < e2 (touching ends do not).

    Returns:
        key -> sorted list of the keys overlapping it.
    """
    items = sorted(spans.items())
    return {i: [j for j, (s2, e2) in items if j != i and s2 < e1 and s1 < e2] for i, (s1, e1) in items}
