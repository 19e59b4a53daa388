"""Consistency across records: configuration, software, hardware, workspace config.

The configuration appears in two key orders in the evidence (protocol order and the
learner's metadata order, spec 2.1); equality here is equality of the mappings, while
``config.json`` itself must also keep the protocol order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from verify.result import CheckResult, check_equal, check_true, unavailable

PROTOCOL_CONFIG_ORDER = ("alpha", "batch_size", "momentum", "weight_decay", "seed", "depth", "epochs",
                         "learning_rate")
FROZEN_CONFIG = {"alpha": 0.5, "batch_size": 128, "momentum": 0.9, "weight_decay": 0.0, "seed": 11, "depth": 2,
                 "epochs": 2, "learning_rate": 0.1}
WORKSPACES = {"baseline": ":4096:8", "small-workspace": ":16:8", "zero-workspace": ":0:0"}
WORKSPACE_RE = re.compile(r"(?::[0-9]+:[0-9]+)+")
"""``CUBLAS_WORKSPACE_CONFIG`` grammar, matched in full (the fixture's ``bundle.fixture.WORKSPACE_RE``;
kept here so the verifier never imports the GPU entry): ``:16:8`` passes, ``:16:8\n`` does not."""


def check_workspace_string(check_id: str, subject: str, value: object) -> CheckResult:
    """A recorded ``CUBLAS_WORKSPACE_CONFIG`` is ``:SIZE:COUNT`` pairs of ASCII digits and nothing else.

    Args:
        value: the recorded string (None: the record ran without one, which other checks judge).
    """
    ok = value is None or (isinstance(value, str) and WORKSPACE_RE.fullmatch(value) is not None)
    return check_true(check_id, subject, ok, f"workspace config {value!r:.40} is not ':SIZE:COUNT' pairs of digits "
                      "matched in full (a trailing newline or space is not the setting cuBLAS read)", recomputed=value)


def check_config(config: object, *, subject: str, reference: dict | None = None) -> CheckResult:
    """A recorded configuration equals the frozen one (as a mapping)."""
    ref = FROZEN_CONFIG if reference is None else reference
    return check_equal("consistency.config", subject, config, ref, what="configuration")


def check_same(check_id: str, items: Iterable[tuple[str, object]], *, what: str) -> CheckResult:
    """All (subject, value) pairs carry the same value; UNAVAILABLE when there are none (nothing compared)."""
    pairs = list(items)
    if not pairs:  # compared nothing: never a PASS
        return unavailable(check_id, "no records", f"{what}: no record states it, so nothing was compared")
    values = [v for _, v in pairs]
    distinct = [v for i, v in enumerate(values) if v not in values[:i]]
    return check_true(check_id, ", ".join(s for s, _ in pairs[:3]) + (" ..." if len(pairs) > 3 else ""),
                      len(distinct) <= 1, f"{what} differs between records: {distinct[:3]!r}",
                      recomputed=distinct[0] if len(distinct) == 1 else distinct)
