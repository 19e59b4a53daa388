"""Counter arithmetic of the verifier, from the protocol's definitions (``docs/protocol.md`` §6.3).

A profile run's range result holds five counters, printed by ncu in base units. Per sequence
(S = 16 task invocations, or 1 two-epoch training sequence):

* DRAM read and write bytes = counter / S; DRAM total bytes = (read + write) / S;
* L2 read and write request bytes = 32 bytes x sectors / S (one sector request is 32 bytes);
* the L2 sector hit rate (percent) is not divided.

Repeats of one profile are summarised by their mean and sample SD (ddof 1). The exported
``.ncu-rep`` agrees with the printed CSV when integer counters are equal and other values lie within
the larger of a relative 1e-9 and half a unit in the CSV's last printed digit.

Only the reading of a printed cell (:func:`protocol.ncu.scale_value`) and the metric names are the
protocol's; the arithmetic is written here, apart from the writer's (``bundle.profile``).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from protocol import ncu
from protocol.errors import BundleError

SECTOR_BYTES = 32
"""Bytes of one L2 sector request (``docs/protocol.md`` §6.3)."""


def cell_value(name: str, row: Mapping[str, Any]) -> float:
    """The base-unit value of one recorded metric row, from its printed cell.

    Args:
        name: the ncu metric.
        row: ``{"raw_value": str, "raw_unit": str[, "value": float]}``.

    Raises:
        BundleError: the cell or unit is refused by :func:`protocol.ncu.scale_value`, or the row's
            ``value`` is not its printed cell in base units.
    """
    value = ncu.scale_value(name, str(row["raw_value"]), str(row["raw_unit"]))
    if "value" in row and float(row["value"]) != value:
        raise BundleError(f"{name}: recorded value {row['value']!r} is not its printed cell {row['raw_value']!r} "
                          f"{row['raw_unit']!r} ({value!r}): the record is inconsistent")
    return value


def per_sequence(metric_rows: Mapping[str, Mapping[str, Any]], sequences: int, scope: str | None = None) -> dict[str, Any]:
    """The per-sequence figures of one range from its recorded metric rows.

    Args:
        metric_rows: metric name -> recorded row (``raw_value``, ``raw_unit``, optional ``value``).
        sequences: S, an integer >= 1.
        scope: ``"task"`` or ``"training"``; adds the protocol's ``counter_unit`` text.

    Returns:
        ``range_training_sequences`` (int) and the six float figures (bytes per sequence and the
        hit rate in percent), then ``counter_unit`` when *scope* is given.

    Raises:
        BundleError: S not a positive integer, an unknown scope, a missing metric or a bad cell.
    """
    if isinstance(sequences, bool) or not isinstance(sequences, int) or sequences < 1:
        raise BundleError(f"sequences in range must be a positive integer, got {sequences!r}")
    if scope is not None and scope not in ncu.COUNTER_UNITS:
        raise BundleError(f"unknown profile scope {scope!r}: expected 'task' or 'training'")
    absent = [m for m in ncu.NCU_METRICS if m not in metric_rows]
    if absent:
        raise BundleError(f"metric rows lack {', '.join(absent)}: the profile is incomplete")
    read, write = cell_value(ncu.DRAM_READ, metric_rows[ncu.DRAM_READ]), cell_value(ncu.DRAM_WRITE, metric_rows[ncu.DRAM_WRITE])
    l2_read = cell_value(ncu.L2_READ_SECTORS, metric_rows[ncu.L2_READ_SECTORS])
    l2_write = cell_value(ncu.L2_WRITE_SECTORS, metric_rows[ncu.L2_WRITE_SECTORS])
    figures: dict[str, Any] = {
        "range_training_sequences": sequences,
        "dram_read_bytes_per_sequence": read / sequences,
        "dram_write_bytes_per_sequence": write / sequences,
        "dram_total_bytes_per_sequence": (read + write) / sequences,
        "l2_read_request_bytes_per_sequence": SECTOR_BYTES * l2_read / sequences,
        "l2_write_request_bytes_per_sequence": SECTOR_BYTES * l2_write / sequences,
        "l2_sector_hit_rate_percent": cell_value(ncu.L2_HIT_RATE, metric_rows[ncu.L2_HIT_RATE]),
    }
    if scope is not None:
        figures["counter_unit"] = ncu.COUNTER_UNITS[scope]
    return figures


def repeat_summary(figures: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean and sample SD (ddof 1) of each float figure over R >= 2 repeats of one profile.

    Returns:
        ``{"mean": {figure: float}, "sample_sd": {figure: float}}``.

    Raises:
        BundleError: fewer than two repeats, or repeats with different float figures.
    """
    if len(figures) < 2:
        raise BundleError(f"a sample SD needs at least two repeats, got {len(figures)}")
    names = [k for k, v in figures[0].items() if isinstance(v, float)]
    for other in figures[1:]:
        if [k for k, v in other.items() if isinstance(v, float)] != names:
            raise BundleError("repeats of one profile have different figures: the records are inconsistent")
    return {"mean": {k: statistics.fmean(f[k] for f in figures) for k in names},
            "sample_sd": {k: statistics.stdev(f[k] for f in figures) for k in names}}


def report_agreement(rows: ncu.CounterRows, report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Whether an ``.ncu-rep``'s values equal the printed CSV's (rule in the module docstring).

    Args:
        rows: the CSV's range result (:class:`protocol.ncu.CounterRows`).
        report: ``{"values": {metric: int | float | str}}`` as :func:`protocol.ncu.read_report_values`.

    Returns:
        Per compared metric: ``csv_value``, ``report_value``, ``tolerance`` (0 when exact).

    Raises:
        BundleError: the first metric on which they disagree.
    """
    printed = {name: (row.raw_value, row.raw_unit) for name, row in rows.metrics.items()}
    for name, cell in rows.device_attributes.items():
        printed.setdefault(name, (cell, rows.attribute_units.get(name, "")))
    out: dict[str, dict[str, Any]] = {}
    for name, got in report["values"].items():
        if name not in printed:
            continue  # the CSV did not print it: nothing to compare
        cell, unit = printed[name]
        if name == ncu.DISPLAY_NAME or isinstance(got, str):
            csv_value, tolerance, same = cell, 0.0, str(got) == cell
        else:
            units = ncu.METRIC_UNITS[name]
            csv_value = ncu.scale_value(name, cell, unit or next(iter(units)))
            if name in ncu.INTEGER_METRICS or isinstance(got, int):
                tolerance, same = 0.0, csv_value.is_integer() and csv_value == float(got)
            else:
                tolerance = max(ncu.REPORT_REL_TOL * abs(float(got)), ncu.printed_resolution(cell) * units.get(unit, 1.0))
                same = abs(float(got) - csv_value) <= tolerance
        if not same:
            raise BundleError(f"the ncu report and CSV disagree on {name} (report {got!r}, CSV {cell!r} {unit!r}): "
                              "the exported report is not the printed profile")
        out[name] = {"csv_value": csv_value, "report_value": got, "tolerance": tolerance}
    return out
