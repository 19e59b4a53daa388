"""Verdict records of the offline verifier: :class:`Status`, :class:`CheckResult`, :class:`VerifyReport`.

A check is a pure function that returns :class:`CheckResult` values; it never raises for a
failed comparison. This module knows nothing about what a check contains (style-examples
section 9); it only gives the small helpers every check uses to compare a recorded value
with a recomputed one, exactly or within an explicit tolerance that the result records.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import BundleError
from verify.records import get


class Status(enum.StrEnum):
    """Outcome of one check. ``UNAVAILABLE`` is never a pass: the input was missing or
    the figure cannot be recomputed anywhere (the reason says which)."""

    PASS = "PASS"
    FAIL = "FAIL"
    UNAVAILABLE = "UNAVAILABLE"


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One verdict.

    Attributes:
        check_id: stable dotted id, e.g. ``energy.trial.idle_adjusted_mj_per_task``.
        subject: what was checked (archive-relative file, draw, trial, workspace).
        status: PASS, FAIL or UNAVAILABLE.
        recorded: the value the evidence records (JSON-able), or None.
        recomputed: the value the verifier derived from raw inputs, or None.
        tolerance: ``"exact"`` or e.g. ``"rel 1e-12, abs 1e-9"``; None when not a comparison.
        reason: one line explaining a FAIL/UNAVAILABLE (or what a PASS established).
    """

    check_id: str
    subject: str
    status: Status
    recorded: Any = None
    recomputed: Any = None
    tolerance: str | None = None
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        """Plain dict for ``--json`` (keys in field order)."""
        return {
            "check_id": self.check_id,
            "subject": self.subject,
            "status": self.status.value,
            "recorded": _jsonable(self.recorded),
            "recomputed": _jsonable(self.recomputed),
            "tolerance": self.tolerance,
            "reason": self.reason,
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return value.item()
    return value


def passed(check_id: str, subject: str, *, recorded: Any = None, recomputed: Any = None,
           tolerance: str | None = None, reason: str = "") -> CheckResult:
    """A PASS verdict."""
    return CheckResult(check_id, subject, Status.PASS, recorded, recomputed, tolerance, reason)


def failed(check_id: str, subject: str, reason: str, *, recorded: Any = None,
           recomputed: Any = None, tolerance: str | None = None) -> CheckResult:
    """A FAIL verdict with its one-line reason."""
    return CheckResult(check_id, subject, Status.FAIL, recorded, recomputed, tolerance, reason)


def unavailable(check_id: str, subject: str, reason: str, *, recorded: Any = None) -> CheckResult:
    """An UNAVAILABLE verdict: the input is absent or the figure is not reproducible."""
    return CheckResult(check_id, subject, Status.UNAVAILABLE, recorded, None, None, reason)


def check_equal(check_id: str, subject: str, recorded: Any, recomputed: Any, *,
                what: str = "value") -> CheckResult:
    """Exact comparison (hashes, counts, flags, strings). ``True != 1`` here."""
    same = type(recorded) is type(recomputed) or (
        isinstance(recorded, int | float) and isinstance(recomputed, int | float)
        and not isinstance(recorded, bool) and not isinstance(recomputed, bool)
    )
    if same and recorded == recomputed:
        return passed(check_id, subject, recorded=recorded, recomputed=recomputed, tolerance="exact")
    return failed(check_id, subject, f"{what}: recorded {_short(recorded)} but recomputed {_short(recomputed)}",
                  recorded=recorded, recomputed=recomputed, tolerance="exact")


def check_close(check_id: str, subject: str, recorded: Any, recomputed: float, *,
                rel_tol: float, abs_tol: float = 0.0, what: str = "value") -> CheckResult:
    """Float comparison within ``rel_tol``/``abs_tol`` (``math.isclose`` semantics).

    A recorded value that is not a finite number (or is a bool) FAILs.
    """
    tol = f"rel {rel_tol:g}, abs {abs_tol:g}"
    if isinstance(recorded, bool) or not isinstance(recorded, int | float) or not math.isfinite(recorded):
        return failed(check_id, subject, f"{what}: recorded {_short(recorded)} is not a finite number",
                      recorded=recorded, recomputed=recomputed, tolerance=tol)
    if math.isfinite(recomputed) and math.isclose(recorded, recomputed, rel_tol=rel_tol, abs_tol=abs_tol):
        return passed(check_id, subject, recorded=recorded, recomputed=recomputed, tolerance=tol)
    return failed(check_id, subject, f"{what}: recorded {recorded!r} but recomputed {recomputed!r} ({tol})",
                  recorded=recorded, recomputed=recomputed, tolerance=tol)


def check_true(check_id: str, subject: str, condition: bool, reason_if_false: str, *,
               recorded: Any = None, recomputed: Any = None) -> CheckResult:
    """PASS when ``condition`` holds, else FAIL with ``reason_if_false``."""
    if condition:
        return passed(check_id, subject, recorded=recorded, recomputed=recomputed)
    return failed(check_id, subject, reason_if_false, recorded=recorded, recomputed=recomputed)


def guarded(check_id: str, subject: str | None, checks: Callable[[], Iterable[CheckResult]]) -> list[CheckResult]:
    """Run one record's checks so that a malformed record fails alone.

    Malformed evidence (:class:`~protocol.errors.BundleError`, e.g. a missing key) or an
    unexpected exception inside ``checks`` becomes one FAIL ``check_id`` naming ``subject``
    (the record's archive path; None: the file the error names, else ``"archive"``); the
    caller goes on with the other records.

    Returns:
        The verdicts of ``checks``, or that one FAIL.
    """
    try:
        return list(checks())
    except BundleError as exc:
        return [failed(check_id, subject or getattr(exc, "file", None) or "archive", str(exc))]
    except Exception as exc:  # noqa: BLE001 - a bug on one record must not hide the others
        line = str(exc).splitlines()[0] if str(exc) else ""
        return [failed(check_id, subject or "archive", f"{type(exc).__name__}: {line}")]


def check_field(check_id: str, subject: str, obj: Any, key: str, kind: type | tuple[type, ...], want: Any, *,
                where: str) -> CheckResult:
    """A required field of ``obj``, read with :func:`verify.records.get`, equals ``want`` exactly.

    A missing or wrong-typed field is one FAIL naming ``where`` (the file) and the key path.
    """
    try:
        value = get(obj, key, kind, where)
    except BundleError as exc:
        return failed(check_id, subject, str(exc))
    return check_equal(check_id, subject, value, want, what=key)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class VerifyReport:
    """All verdicts for one archive, in the order the checks ran.

    Attributes:
        archive: the archive folder as given.
        kind: ``"run"`` (one of our archives, with ``manifest.json``) or ``"original"``.
        results: the verdicts.
        timings_s: wall seconds per stage (``hashing`` = reading, hashing, decompressing).
    """

    archive: str
    kind: str
    results: list[CheckResult] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)

    def extend(self, results: Iterable[CheckResult]) -> None:
        """Append verdicts."""
        self.results.extend(results)

    def __iter__(self) -> Iterator[CheckResult]:
        return iter(self.results)

    def count(self, status: Status) -> int:
        """Number of verdicts with ``status``."""
        return sum(1 for r in self.results if r.status is status)

    @property
    def ok(self) -> bool:
        """True when nothing FAILed (UNAVAILABLE does not fail an archive, nor pass a check)."""
        return self.count(Status.FAIL) == 0

    def failures(self) -> list[CheckResult]:
        """The FAIL verdicts."""
        return [r for r in self.results if r.status is Status.FAIL]

    def verified(self, check_id: str, subject: str | None = None) -> Any:
        """The recomputed value of a PASSed check, or None when absent or not passed.

        Reports use this so that only verified figures are ever shown.
        """
        for r in self.results:
            if r.check_id == check_id and (subject is None or r.subject == subject):
                return r.recomputed if r.status is Status.PASS else None
        return None

    def to_json(self) -> dict[str, Any]:
        """Plain dict for ``--json``."""
        return {
            "archive": self.archive,
            "kind": self.kind,
            "passed": self.ok,
            "counts": {s.value: self.count(s) for s in Status},
            "timings_s": self.timings_s,
            "results": [r.to_json() for r in self.results],
        }
