"""Profiling checks: per-sequence DRAM and L2 figures recomputed from raw metric rows (spec 6.3).

value = float(raw_value without thousands separators) × unit scale; with S sequences in
the range (16 for scope ``task``, 1 for ``training``): DRAM read/write/total bytes per
sequence = metric / S; L2 request bytes per sequence = 32 × sectors / S; the hit rate is
not normalised. ``.ncu-rep`` reports are read through ``ncu_report`` only when it is
installed; otherwise those checks are UNAVAILABLE with the reason.
"""

from __future__ import annotations

import importlib.util
import math

from verify.checks import FLOAT_ABS_TOL, FLOAT_REL_TOL
from verify.records import get, get_dict, get_str
from verify.result import CheckResult, check_close, check_equal, check_true, unavailable

METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_op_read.sum",
           "lts__t_sectors_op_write.sum", "lts__t_sector_hit_rate.pct")
UNIT_SCALE = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "sector": 1.0, "%": 1.0}
L2_SECTOR_BYTES = 32
SEQUENCES_IN_RANGE = {"task": 16, "training": 1}


def metric_value(row: dict, name: str, where: str) -> float:
    """Scaled value of one raw metric row (``raw_value``, ``raw_unit``).

    Raises:
        RecordError: missing fields. An unknown unit or non-finite/negative value raises ValueError.
    """
    raw = get_str(row, "raw_value", f"{where}: {name}")
    unit = get_str(row, "raw_unit", f"{where}: {name}")
    if unit not in UNIT_SCALE:
        raise ValueError(f"unknown unit {unit!r} for {name} ({where}): expected one of {sorted(UNIT_SCALE)}")
    value = float(raw.replace(",", "")) * UNIT_SCALE[unit]
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"metric {name} = {raw!r} is not a finite non-negative number ({where})")
    return value


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
        return unavailable("profile.ncu_report", subject, "the .ncu-rep.gz report is not in the archive",
                           recorded=recorded_sha)
    if importlib.util.find_spec("ncu_report") is None:
        return unavailable("profile.ncu_report", subject, "ncu_report is not installed (pip install "
                           "'rev88-bundle[ncu]'); the report's metrics were not re-read", recorded=recorded_sha)
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
