"""Energy records against their own NVML logs (``<stem>.nvml.jsonl.gz``, written with ``--record-nvml``).

The log is the raw source of every number a fixture's energy protocol recorded: each line is
one pynvml call (``seq``, ``channel``, ``call``, ``args``, ``value`` | ``error_code``,
``t_start_s``/``t_end_s`` on the stamps' ``perf_counter`` clock; docs/evidence-format.md). Per
energy record:

* the log is whole: ``seq`` counts 0, 1, 2 … and it opens with ``nvmlInit`` and closes with
  ``nvmlShutdown``;
* the hardware block is the log's: the handle was taken by the CUDA device's PCI bus id, and
  the PCI id, power limit (mW / 1000), name, UUID and driver are the values NVML answered;
* every stamp is a counter read of the log: the main channel's
  ``nvmlDeviceGetTotalEnergyConsumption`` reads, in order, are consumed by the stamps in
  order (idle before, active, idle after; start then end; one read per stamp, or ``polls``
  reads for an aligned stamp whose last read is the first that changed), the stamp's
  ``energy_mj`` is that read's value and its ``time_s ± query_latency_s / 2`` brackets the
  read's call window; no read is left over;
* the counter reads, in the log's order, are made one after another and never go backwards (NVML's total
  energy counter only grows);
* every telemetry snapshot is the log's power usage (mW / 1000), temperature, graphics and
  memory clocks and field-186 power, in order;
* every power sample is a sampler-channel field-186 read (mW / 1000) whose call window holds
  the sample's time.

An archive whose energy phase kept no log at all reads UNAVAILABLE for these checks; one
that kept logs for some records must keep one for every energy record.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from itertools import pairwise
from typing import Any

from verify.checks import run
from verify.integrity import ArchiveFiles
from verify.records import RecordError, get, get_dict, get_float, get_int, get_list
from verify.result import CheckResult, check_equal, check_true, failed, guarded, unavailable

CLOCK_SLACK_S = 10e-3
"""How far a power sample's time may lie outside its read's call window: a chosen margin, not a
bound. The sampler (``bundle.energy_glue.PowerSampler``) records the midpoint of two clock reads
that bracket the call; a thread that waits for the GIL between the call's return and its second
clock read moves that midpoint past the call by half the wait. CPython hands the GIL over after its
switch interval (5 ms by default) when nothing else delays it, so 5 ms covers an ordinary handoff
and 10 ms leaves room for a loaded host. Measured: of 6,099 samples of one Triton fused archive of
2026-12-02 (retired; evidence/INDEX.md) one lay 3.1 ms past its read (the next largest 0.8 ms); the
older archives' largest is 0.2 ms. The
samples feed plots, never a figure, and their watts must still equal the read's exactly."""
STAMP_SLACK_S = 1e-9
"""Float rounding allowed when a stamp's clock reads bracket its counter read."""
STAMPS = tuple((w, e) for w in ("idle_before", "active", "idle_after") for e in ("start", "end"))


def log_path(record_rel: str) -> str:
    """The NVML log the energy phase stores next to a fixture record (``<stem>.nvml.jsonl.gz``)."""
    return record_rel[: -len(".json.gz")] + ".nvml.jsonl.gz"


def parse_log(data: bytes, where: str) -> list[dict]:
    """The log's lines as objects (one JSON object per line); parsed once per content (callers must not
    change the returned objects).

    Raises:
        RecordError: a line that is not a JSON object with ``seq``, ``channel``, ``call``, times.
    """
    return _parse_log(data, where)


@lru_cache(maxsize=64)
def _parse_log(data: bytes, where: str) -> list[dict]:
    out = []
    for i, line in enumerate(data.decode("utf-8").splitlines()):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise RecordError(f"NVML log line {i + 1} is not JSON ({where}): {exc}", where) from None
        for key, kind in (("seq", int), ("channel", str), ("call", str), ("t_start_s", float), ("t_end_s", float)):
            get(obj, key, kind, f"{where}: line {i + 1}")
        out.append(obj)
    return out


def _value(entry: Mapping[str, Any]) -> Any:
    return None if "error_code" in entry else entry.get("value")


def _field_w(entry: Mapping[str, Any]) -> float | None:
    values = _value(entry)
    if not values or not isinstance(values, list) or values[0].get("nvmlReturn") != 0 or values[0].get("value") is None:
        return None
    return float(values[0]["value"]) / 1000


def energy_records(f: ArchiveFiles) -> list[tuple[str, dict]]:
    """(path, record) of every fixture record with an ``energy`` block."""
    return [(rel, rec) for rel, rec in run.fixture_records(f) if isinstance(rec.get("energy"), dict) and rec["energy"]]


def check_nvml_logs(f: ArchiveFiles) -> list[CheckResult]:
    """Family entry: each energy record against its NVML log."""
    records = energy_records(f)
    if not records:
        return []
    with_log = [rel for rel, _ in records if f.has(log_path(rel))]
    out: list[CheckResult] = []
    for rel, rec in records:
        log_rel = log_path(rel)
        if not f.has(log_rel):
            if with_log:
                out.append(failed("energy.nvml_log.present", rel, f"{log_rel} is missing while {len(with_log)} other "
                                  "energy records of this archive keep their NVML log: the phase records all or none"))
            else:
                out.append(unavailable("energy.nvml_log", rel, "the energy phase ran without --record-nvml: no NVML "
                                       "log to cross-check the stamps, telemetry and power samples against"))
            continue
        out += guarded("energy.nvml_log", rel, lambda rel=rel, rec=rec, log_rel=log_rel: check_record_log(
            get_dict(rec, "energy", rel), parse_log(f.read(log_rel), log_rel), subject=rel, where=rel, log_rel=log_rel))
    return out


def check_record_log(e: Mapping[str, Any], log: list[dict], *, subject: str, where: str,
                     log_rel: str) -> list[CheckResult]:
    """One record's energy block against its parsed log (see the module docstring)."""
    out: list[CheckResult] = []
    seqs = [line["seq"] for line in log]
    main = [line for line in log if line["channel"] == "main"]
    out.append(check_true("energy.nvml_log.whole", subject, seqs == list(range(len(log))) and bool(main)
                          and main[0]["call"] == "nvmlInit" and main[-1]["call"] == "nvmlShutdown",
                          f"{log_rel}: seq not 0..{len(log) - 1} in order, or it does not open with nvmlInit and close "
                          "with nvmlShutdown: not the whole log of the job", recomputed=len(log)))

    def first(call: str) -> Any:
        for line in main:
            if line["call"] == call:
                return line
        return None

    hw = get_dict(e, "hardware", where)
    handle, pci, limit = first("nvmlDeviceGetHandleByPciBusId"), first("nvmlDeviceGetPciInfo"), \
        first("nvmlDeviceGetPowerManagementLimit")
    logged = {"handle_by_cuda_pci_bus_id": (handle or {}).get("args", [None])[0] if handle else None,
              "nvml_pci_bus_id": (_value(pci) or {}).get("busId") if pci else None,
              "power_limit_w": None if limit is None or _value(limit) is None else _value(limit) / 1000,
              "gpu": _value(first("nvmlDeviceGetName") or {}), "uuid": _value(first("nvmlDeviceGetUUID") or {}),
              "driver": _value(first("nvmlSystemGetDriverVersion") or {})}
    recorded = {"handle_by_cuda_pci_bus_id": get(hw, "cuda_pci_bus_id", str, where),
                "nvml_pci_bus_id": get(hw, "nvml_pci_bus_id", str, where),
                "power_limit_w": get(hw, "power_limit_w", (float, type(None)), where), "gpu": get(hw, "gpu", str, where),
                "uuid": get(hw, "uuid", str, where), "driver": get(hw, "driver", str, where)}
    out.append(check_equal("energy.nvml_log.hardware", subject, recorded, logged,
                           what=f"energy hardware block vs the NVML answers in {log_rel}"))
    out += _check_stamps(e, main, subject=subject, where=where, log_rel=log_rel)
    out += _check_telemetry(e, main, subject=subject, where=where, log_rel=log_rel)
    out += _check_samples(e, [line for line in log if line["channel"] == "sampler"], subject=subject, where=where,
                          log_rel=log_rel)
    return out


def _check_stamps(e: Mapping[str, Any], main: list[dict], *, subject: str, where: str, log_rel: str) -> list[CheckResult]:
    reads = [line for line in main if line["call"] == "nvmlDeviceGetTotalEnergyConsumption"]
    aligned = bool(get_dict(e, "settings", where).get("align_stamps"))
    pos = 0
    bad: list[str] = []
    for i, trial in enumerate(get_list(e, "trials", where)):
        w = f"{where}: trials.{i}"
        for win, end in STAMPS:
            stamp = get_dict(trial, f"{win}.{end}", w)
            polls = get_int(stamp, "polls", w) if aligned else 1
            group = reads[pos:pos + polls]
            pos += polls
            name = f"trial {i} {win}.{end}"
            if len(group) != polls or polls < 1:
                bad.append(f"{name}: the log has no read left for it")
                continue
            last = group[-1]
            mj, t, lat = get_int(stamp, "energy_mj", w), get_float(stamp, "time_s", w), get_float(stamp, "query_latency_s", w)
            if _value(last) != mj:
                bad.append(f"{name}: energy_mj {mj} but the log read {_value(last)!r}")
            if not (t - lat / 2 - STAMP_SLACK_S <= last["t_start_s"] <= last["t_end_s"] <= t + lat / 2 + STAMP_SLACK_S):
                bad.append(f"{name}: time {t} ± {lat / 2:.6f} s does not bracket the read at "
                           f"[{last['t_start_s']}, {last['t_end_s']}]")
            if aligned and polls >= 2 and (any(_value(g) != _value(group[0]) for g in group[:-1])
                                           or _value(group[0]) == mj):
                bad.append(f"{name}: the {polls} polls are not unchanged reads followed by the first changed one")
    if pos != len(reads):
        bad.append(f"{len(reads) - pos} counter reads of the log are used by no stamp")
    backwards = [f"seq {b['seq']}: {_value(a)} mJ at {a['t_start_s']} s, then {_value(b)} mJ at {b['t_start_s']} s"
                 for a, b in pairwise(reads)
                 if b["t_start_s"] < a["t_end_s"] or (isinstance(_value(a), int) and isinstance(_value(b), int)
                                                      and _value(b) < _value(a))]
    return [check_true("energy.nvml_log.stamps", subject, not bad,
                       f"stamps vs the counter reads of {log_rel}: {'; '.join(bad[:3])}", recomputed=len(reads)),
            check_true("energy.nvml_log.counter_order", subject, not backwards,
                       f"counter reads of {log_rel} overlap in time or go backwards ({'; '.join(backwards[:3])}): "
                       "NVML's total energy counter only grows", recomputed=len(reads))]


def _check_telemetry(e: Mapping[str, Any], main: list[dict], *, subject: str, where: str,
                     log_rel: str) -> list[CheckResult]:
    def values(call: str, args: list | None = None) -> list[Any]:
        return [_value(line) for line in main if line["call"] == call and (args is None or line.get("args") == args)]

    power = [None if v is None else v / 1000 for v in values("nvmlDeviceGetPowerUsage")]
    temps = values("nvmlDeviceGetTemperature")
    graphics = values("nvmlDeviceGetClockInfo", [0])
    memory = values("nvmlDeviceGetClockInfo", [2])
    instant = [_field_w(line) for line in main if line["call"] == "nvmlDeviceGetFieldValues"]
    logged = [{"temperature_c": tc, "power_w": p, "graphics_clock_mhz": g, "memory_clock_mhz": m, "instant_power_w": w}
              for tc, p, g, m, w in zip(temps, power, graphics, memory, instant, strict=False)]
    recorded = []
    for i, trial in enumerate(get_list(e, "trials", where)):
        for key in ("telemetry_before", "telemetry_after"):
            snap = get_dict(trial, key, f"{where}: trials.{i}")
            recorded.append({k: snap.get(k) for k in ("temperature_c", "power_w", "graphics_clock_mhz", "memory_clock_mhz",
                                                      "instant_power_w")})
    return [check_equal("energy.nvml_log.telemetry", subject, recorded, logged,
                        what=f"telemetry snapshots vs the NVML answers in {log_rel}")]


def _check_samples(e: Mapping[str, Any], sampler: list[dict], *, subject: str, where: str,
                   log_rel: str) -> list[CheckResult]:
    samples = [s for t in get_list(e, "trials", where) for s in get_list(t, "power_samples", where)]
    reads = []
    for line in sampler:
        watts = _field_w(line)
        if watts is None:
            break  # the sampler stops at the first read that does not answer
        reads.append((line["t_start_s"], line["t_end_s"], watts))
    bad = []
    if len(samples) != len(reads):
        bad.append(f"{len(samples)} power samples but {len(reads)} sampler reads")
    for k, (s, (t0, t1, watts)) in enumerate(zip(samples, reads, strict=False)):
        t, w = get_float(s, "time_s", where), get_float(s, "power_w", where)
        if w != watts or not t0 - CLOCK_SLACK_S <= t <= t1 + CLOCK_SLACK_S:
            bad.append(f"sample {k} ({t}, {w} W) vs the read at [{t0}, {t1}] of {watts} W")
    return [check_true("energy.nvml_log.power_samples", subject, not bad,
                       f"power samples vs the sampler reads of {log_rel}: {'; '.join(bad[:3])}", recomputed=len(reads))]
