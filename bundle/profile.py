"""Nsight Compute (``ncu``): command line, raw-page CSV parsing, per-sequence normalisation.

The profiled process is the fixture (``python -m bundle.fixture --mode profile``), run
under ``ncu --replay-mode app-range`` so that the one ``cudaProfilerStart``/``Stop`` range
of the fixture becomes one profile result (spec 6.1, 6.2). The command line, the
CSV parser and the report reader are the protocol's (:mod:`protocol.ncu`, re-exported here); this
module finds ncu, normalises the five counters per sequence exactly as the original's analyzer
did (spec 6.3) and cross-checks the exported ``.ncu-rep`` against the CSV. The verifier does that
arithmetic with its own code (:mod:`verify.arith.counters`).

This module never imports torch.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from protocol.errors import BundleError
from protocol.ncu import (  # noqa: F401  (the definitions; re-exported for the writer's call sites)
    _BYTE_UNITS,
    _FORBIDDEN_FLAGS,
    _NANOSECOND_UNITS,
    _PASSES_RE,
    _PERCENT_UNITS,
    _SECTOR_UNITS,
    _VERSION_RE,
    COUNTER_UNITS,
    DEFAULT_LEARNER,
    DEVICE_ATTRIBUTES,
    DISPLAY_NAME,
    DRAM_READ,
    DRAM_WRITE,
    FIXTURE_REPEATS,
    GPU_TIME_DURATION,
    HIT_RATE_MAX_PERCENT,
    HIT_RATE_REFUSE_PERCENT,
    INTEGER_METRICS,
    L2_CACHE_SIZE,
    L2_HIT_RATE,
    L2_READ_SECTORS,
    L2_SECTOR_BYTES,
    L2_WRITE_SECTORS,
    METRIC_UNITS,
    NCU_METRICS,
    NCU_PROFILE_FLAGS,
    NUMBER_RE,
    PINNED_NCU_VERSION,
    QUERY_METRICS,
    RANGE_KERNEL_NAME,
    REPLAYER_PASSES,
    REPORT_ATTRIBUTES,
    REPORT_REL_TOL,
    SCALED_UNITS,
    SEQUENCES_IN_RANGE,
    CounterRow,
    CounterRows,
    audit_profile_command,
    csv_lines,
    fixture_argv,
    import_ncu_report,
    package_version,
    parse_ncu_number,
    parse_ncu_version,
    parse_raw_csv,
    printed_resolution,
    profile_argv,
    query_argv,
    read_report_values,
    replay_pass_counts,
    scale_value,
    version_argv,
)

# --- where ncu is looked for ----------------------------------------------------------------
NCU_ENV = "REV88_NCU"
NCU_INSTALL_GLOB = "/opt/nvidia/nsight-compute/*/ncu"
NCU_CUDA_PATH = "/usr/local/cuda/bin/ncu"

PERMISSION_MARKER = "ERR_NVGPUCTRPERM"
PERMISSION_HINT = (
    "allow GPU performance counters: on the host set the nvidia module option "
    "NVreg_RestrictProfilingToAdminUsers=0 (or profile as root); in a container add --cap-add SYS_ADMIN"
)


def _row_value(name: str, row: CounterRow | Mapping[str, Any]) -> float:
    if isinstance(row, CounterRow):
        return scale_value(name, row.raw_value, row.raw_unit)
    value = scale_value(name, str(row["raw_value"]), str(row["raw_unit"]))
    if "value" in row and float(row["value"]) != value:
        raise BundleError(
            f"recorded value {row['value']!r} of {name} is not its raw value {row['raw_value']!r} "
            f"{row['raw_unit']!r} scaled ({value!r}): the record is inconsistent"
        )
    return value


def normalise_counters(
    rows: CounterRows | Mapping[str, CounterRow | Mapping[str, Any]],
    sequences: int,
    scope: str | None = None,
) -> dict[str, Any]:
    """Per-sequence figures of one range (spec 6.3), recomputed from the raw cells.

    With S = *sequences* (16 task invocations, or 1 two-epoch training sequence):
    DRAM read/write/total bytes = counter / S (total = (read + write) / S); L2 read/write
    request bytes = 32 × sectors / S; the hit rate is not normalised.

    Args:
        rows: a :class:`CounterRows`, or a mapping name -> row in the original's
            ``metric_rows`` shape (``raw_value``, ``raw_unit`` and optionally ``value``,
            which must equal the recomputed value).
        sequences: S ≥ 1.
        scope: ``"task"`` or ``"training"``; adds the original's ``counter_unit`` text.

    Returns:
        ``range_training_sequences``, ``dram_read_bytes_per_sequence``,
        ``dram_write_bytes_per_sequence``, ``dram_total_bytes_per_sequence``,
        ``l2_read_request_bytes_per_sequence``, ``l2_write_request_bytes_per_sequence``,
        ``l2_sector_hit_rate_percent`` (floats), then ``counter_unit`` when *scope* is given;
        the original's field names.

    Raises:
        BundleError: S < 1, unknown scope, a missing metric, or a bad/inconsistent value.
    """
    if isinstance(sequences, bool) or not isinstance(sequences, int) or sequences < 1:
        raise BundleError(f"sequences in range must be a positive integer, got {sequences!r}")
    if scope is not None and scope not in COUNTER_UNITS:
        raise BundleError(f"unknown profile scope {scope!r}: use 'task' or 'training'")
    table = rows.metrics if isinstance(rows, CounterRows) else rows
    missing = [name for name in NCU_METRICS if name not in table]
    if missing:
        raise BundleError(f"metric rows lack {', '.join(missing)}: the profile is incomplete")
    value = {name: _row_value(name, table[name]) for name in NCU_METRICS}
    out: dict[str, Any] = {
        "range_training_sequences": sequences,
        "dram_read_bytes_per_sequence": value[DRAM_READ] / sequences,
        "dram_write_bytes_per_sequence": value[DRAM_WRITE] / sequences,
        "dram_total_bytes_per_sequence": (value[DRAM_READ] + value[DRAM_WRITE]) / sequences,
        "l2_read_request_bytes_per_sequence": L2_SECTOR_BYTES * value[L2_READ_SECTORS] / sequences,
        "l2_write_request_bytes_per_sequence": L2_SECTOR_BYTES * value[L2_WRITE_SECTORS] / sequences,
        "l2_sector_hit_rate_percent": value[L2_HIT_RATE],
    }
    if scope is not None:
        out["counter_unit"] = COUNTER_UNITS[scope]
    return out


def summarise_repeats(figures: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean and sample standard deviation (ddof 1, numpy) of each numeric per-sequence figure.

    Args:
        figures: the :func:`normalise_counters` results of R ≥ 2 repeats of one profile.

    Returns:
        ``{"mean": {field: float}, "sample_sd": {field: float}}`` over the float fields.

    Raises:
        BundleError: fewer than two repeats, or repeats with different fields.
    """
    if len(figures) < 2:
        raise BundleError(f"a sample SD needs at least two repeats, got {len(figures)}")
    keys = [k for k, v in figures[0].items() if isinstance(v, float)]
    if any([k for k, v in f.items() if isinstance(v, float)] != keys for f in figures):
        raise BundleError("repeats of one profile have different fields: the records are inconsistent")
    mean, sd = {}, {}
    for key in keys:
        arr = np.asarray([f[key] for f in figures], dtype=np.float64)
        mean[key] = float(np.mean(arr))
        sd[key] = float(np.std(arr, ddof=1))
    return {"mean": mean, "sample_sd": sd}


def check_metric_query(exit_code: int, output: str) -> None:
    """Require the metric query to succeed and name all five metrics (spec 6.3).

    Raises:
        BundleError: permission error, non-zero status, or a metric the device lacks.
    """
    check_ncu_exit("ncu --query-metrics", exit_code, output)
    missing = [name for name in QUERY_METRICS if name not in output]
    if missing:
        raise BundleError(
            f"ncu --query-metrics does not list {', '.join(missing)} for this GPU: "
            "use an Nsight Compute that supports this GPU"
        )


def check_ncu_exit(where: str, exit_code: int, output: str) -> None:
    """Turn a failed ncu run into one line: counters not permitted, or a non-zero status.

    Args:
        where: what ran (e.g. ``"profile workspace-16-8-task-r00"``).
        exit_code: ncu's exit status.
        output: its stdout and stderr.

    Raises:
        BundleError: ``ERR_NVGPUCTRPERM`` in the output (exit code 3), or exit code ≠ 0.
    """
    if PERMISSION_MARKER in output:
        raise BundleError(
            f"GPU performance counters are not permitted ({PERMISSION_MARKER} from ncu, {where}): "
            f"{PERMISSION_HINT}",
            exit_code=3,
        )
    if exit_code != 0:
        lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("==ERROR==")] or [ln for ln in lines if "error" in ln.lower()]
        detail = (errors or lines or ["no output"])[-1]
        raise BundleError(f"ncu failed with exit status {exit_code} ({where}: {detail}): see the kept ncu output")


def _version_key(path: str) -> tuple[int, ...]:
    parts = re.findall(r"\d+", Path(path).parent.name)
    return tuple(int(p) for p in parts)


def find_ncu(
    explicit: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    install_glob: str = NCU_INSTALL_GLOB,
    cuda_path: str = NCU_CUDA_PATH,
) -> str:
    """Locate the ``ncu`` executable.

    Order: *explicit* (``--ncu``), ``$REV88_NCU``, ``PATH``, the newest
    ``/opt/nvidia/nsight-compute/*/ncu``, ``/usr/local/cuda/bin/ncu``. An explicit or
    environment value must exist; the rest are searched.

    Returns:
        Absolute path of an executable ``ncu``.

    Raises:
        BundleError: none found (the message lists every place looked at).
    """
    env = os.environ if environ is None else environ

    def usable(candidate: str) -> str | None:
        found = shutil.which(candidate, path=env.get("PATH", os.defpath)) if os.sep not in candidate \
            else (candidate if os.path.isfile(candidate) and os.access(candidate, os.X_OK) else None)
        return os.path.abspath(found) if found else None

    for label, given in (("--ncu", explicit), (NCU_ENV, env.get(NCU_ENV))):
        if given:
            found = usable(str(given))
            if not found:
                raise BundleError(f"ncu not found at {given} (given by {label}): pass the path of an executable ncu")
            return found
    candidates = ["ncu", *sorted(glob.glob(install_glob), key=_version_key, reverse=True), cuda_path]
    for candidate in candidates:
        found = usable(candidate)
        if found:
            return found
    raise BundleError(
        f"ncu not found (looked at --ncu, ${NCU_ENV}, PATH, {install_glob}, {cuda_path}): "
        "install Nsight Compute or pass --ncu PATH"
    )


def compare_report_values(rows: CounterRows, report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Require the ``.ncu-rep`` values to equal the CSV's.

    Integer counters (:data:`INTEGER_METRICS`, or any integer report value) must equal the
    CSV value exactly. Other floating values must agree
    within ``max(1e-9 × |value|, half a unit in the CSV's last printed digit)``: the CSV
    prints ratios rounded (``"95.45"``) while the report keeps the double.

    Args:
        rows: the parsed CSV.
        report: :func:`read_report_values` output.

    Returns:
        Per metric: ``csv_value``, ``report_value``, ``tolerance`` (0 for exact).

    Raises:
        BundleError: any disagreement (names the metric and both values).
    """
    out: dict[str, dict[str, Any]] = {}
    for name, report_value in report["values"].items():
        if name in rows.metrics:
            raw, unit = rows.metrics[name].raw_value, rows.metrics[name].raw_unit
        elif name in rows.device_attributes:
            raw, unit = rows.device_attributes[name], rows.attribute_units.get(name, "")
        else:
            continue
        if isinstance(report_value, str) or name == DISPLAY_NAME:
            agree, csv_value, tolerance = str(report_value) == raw, raw, 0.0
        else:
            csv_value = scale_value(name, raw, unit or next(iter(METRIC_UNITS[name])))
            if isinstance(report_value, int) or name in INTEGER_METRICS:
                tolerance = 0.0
                agree = csv_value.is_integer() and float(report_value) == csv_value
            else:
                scale = METRIC_UNITS[name].get(unit, 1.0)
                tolerance = max(REPORT_REL_TOL * abs(float(report_value)), printed_resolution(raw) * scale)
                agree = abs(csv_value - float(report_value)) <= tolerance
        if not agree:
            raise BundleError(
                f"the ncu report and CSV disagree on {name} (report {report_value!r}, CSV {raw!r} {unit!r}): "
                "the exported report is not the printed profile"
            )
        out[name] = {"csv_value": csv_value, "report_value": report_value, "tolerance": tolerance}
    return out


def cross_check_report(rows: CounterRows, report_path: str | os.PathLike[str],
                       module: Any | None = None) -> dict[str, Any]:
    """Read the exported ``.ncu-rep`` with ``ncu_report`` and compare it with the CSV.

    Args:
        rows: the parsed CSV of the same run.
        report_path: the uncompressed ``.ncu-rep``.
        module: the ``ncu_report`` module (default: imported here).

    Returns:
        ``{"status": "passed", "ncu_report_version", "action_name", "metrics"}``, or
        ``{"status": "skipped", "reason"}`` when ``ncu_report`` cannot be imported (never
        reported as passed).

    Raises:
        BundleError: unreadable report, not one result, or a disagreement.
    """
    reason = None
    if module is None:
        module, reason = import_ncu_report()
    if module is None:
        return {"status": "skipped", "reason": reason}
    report = read_report_values(module, report_path)
    metrics = compare_report_values(rows, report)
    return {"status": "passed", "ncu_report_version": package_version("ncu-report"),
            "action_name": report["action_name"], "metrics": metrics}
