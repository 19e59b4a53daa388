"""Profiling checks: per-sequence DRAM and L2 figures recomputed from raw metric rows (spec 6.3).

value = float(raw_value without thousands separators), base units only (a scaled unit such
as ``Mbyte`` is refused, never rescaled: :func:`protocol.ncu.scale_value`); with S sequences in
the range (16 for scope ``task``, 1 for ``training``): DRAM read/write/total bytes per
sequence = metric / S; L2 request bytes per sequence = 32 × sectors / S; the hit rate is
not normalised. ``.ncu-rep`` reports are read through ``ncu_report`` only when it is
installed; otherwise those checks are UNAVAILABLE with the reason.
"""

from __future__ import annotations

import importlib.util

from protocol import ncu as counters
from protocol.errors import BundleError
from verify.checks import FLOAT_ABS_TOL, FLOAT_REL_TOL
from verify.records import RecordError, get, get_dict, get_str
from verify.result import CheckResult, check_close, check_equal, check_true, unavailable

METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_op_read.sum",
           "lts__t_sectors_op_write.sum", "lts__t_sector_hit_rate.pct")
L2_SECTOR_BYTES = 32
SEQUENCES_IN_RANGE = {"task": 16, "training": 1}


def metric_value(row: dict, name: str, where: str) -> float:
    """Value of one raw metric row (``raw_value``, ``raw_unit``) in its base unit.

    Parsed strictly by :func:`protocol.ncu.scale_value`: base units only (byte, sector, %),
    numbers in ncu's printed grammar (``1,234,567``; ``1,23`` refused), a hit rate at most
    :data:`protocol.ncu.HIT_RATE_REFUSE_PERCENT`.

    Raises:
        RecordError: missing fields, a scaled or unknown unit, a malformed, negative or
            non-finite number, or a hit rate above the refusal bound.
    """
    raw = get_str(row, "raw_value", f"{where}: {name}")
    unit = get_str(row, "raw_unit", f"{where}: {name}")
    try:
        return counters.scale_value(name, raw, unit)
    except BundleError as exc:
        raise RecordError(f"{exc} ({where}: metric_rows.{name})", where) from None


def normalise(values: dict[str, float], sequences: int) -> dict[str, float]:
    """Per-sequence figures from the five scaled metric totals."""
    read, write = values["dram__bytes_read.sum"], values["dram__bytes_write.sum"]
    return {
        "dram_read_bytes_per_sequence": read / sequences,
        "dram_write_bytes_per_sequence": write / sequences,
        "dram_total_bytes_per_sequence": (read + write) / sequences,
        "l2_read_request_bytes_per_sequence": L2_SECTOR_BYTES * values["lts__t_sectors_op_read.sum"] / sequences,
        "l2_write_request_bytes_per_sequence": L2_SECTOR_BYTES * values["lts__t_sectors_op_write.sum"] / sequences,
        "l2_sector_hit_rate_percent": values["lts__t_sector_hit_rate.pct"],
    }


def check_profile_figures(record: dict, *, scope: str, subject: str, where: str,
                          hit_rate_max_percent: float | None = 100.0) -> list[CheckResult]:
    """Recompute the per-sequence figures of a profile record from its metric rows.

    Args:
        record: holds ``metric_rows`` (name -> {value, raw_value, raw_unit, range_id}) and
            the six ``*_per_sequence`` / hit-rate figures.
        scope: ``task`` or ``training`` (decides S).
        hit_rate_max_percent: upper bound for the hit rate; None on boards where ncu reports
            values above 100 (the H200 showed 100.24).
    """
    rows = get_dict(record, "metric_rows", where)
    values = {}
    out: list[CheckResult] = []
    for name in METRICS:
        row = get(rows, (name,), dict, where)
        values[name] = metric_value(row, name, where)
        out.append(check_close(f"profile.metric.{name}", subject, row.get("value"), values[name],
                               rel_tol=FLOAT_REL_TOL, abs_tol=0.0, what=f"{name} value from raw_value × unit"))
    sequences = SEQUENCES_IN_RANGE[scope]
    for key, value in normalise(values, sequences).items():
        out.append(check_close(f"profile.{key}", subject, record.get(key), value, rel_tol=FLOAT_REL_TOL,
                               abs_tol=FLOAT_ABS_TOL, what=f"{key} (S = {sequences})"))
    if hit_rate_max_percent is not None:
        hit = values["lts__t_sector_hit_rate.pct"]
        out.append(check_true("profile.hit_rate_range", subject, hit <= hit_rate_max_percent,
                              f"hit rate {hit} exceeds {hit_rate_max_percent}", recomputed=hit))
    return out


def check_ncu_report(subject: str, present: bool, recorded_sha: str | None) -> CheckResult:
    """Metrics from the ``.ncu-rep`` itself: needs the file and the ``ncu_report`` module."""
    if not present:
        return unavailable("profile.ncu_report", subject, "this copy of the archive does not hold the .ncu-rep.gz "
                           "report, so it cannot be re-read here, with or without ncu_report installed",
                           recorded=recorded_sha)
    if importlib.util.find_spec("ncu_report") is None:
        return unavailable("profile.ncu_report", subject, "ncu_report is not installed (.venv/bin/pip "
                           "install -e '.[ncu]'); the report's metrics were not re-read", recorded=recorded_sha)
    return unavailable("profile.ncu_report", subject, "reading .ncu-rep metrics is done per run archive")


def check_device_attributes(attrs: dict, *, expected_name: str, expected_l2_bytes: int, subject: str,
                            where: str) -> list[CheckResult]:
    """ncu's device attributes agree with the fixture's device and the board's L2 size."""
    return [
        check_equal("profile.device_name", subject, get(attrs, "device__attribute_display_name", str, where),
                    expected_name, what="ncu display name vs fixture device"),
        check_equal("profile.l2_cache_size", subject, int(get(attrs, "device__attribute_l2_cache_size", str, where)),
                    expected_l2_bytes, what="L2 size"),
    ]
