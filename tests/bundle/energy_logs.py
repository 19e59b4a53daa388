"""Test helper: NVML call logs made from the original's draw-0 energy record (until an H200 log is recorded).

The log is the call sequence that ``bundle.energy_glue.measure_protocol(mode="original")``
makes through ``bundle.nvml.NvmlDevice``, with the original's raw stamps as the counter
readings (their midpoint +/- half the query latency as the call times) and its telemetry.
Field 186 answers NOT_SUPPORTED (the A100 record has no instant power).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ORIGINAL_DRAW0 = Path(__file__).resolve().parents[2] / "evidence" / "rev88-original" / "results" / "draw-00.json"


def original_energy() -> dict[str, Any]:
    """The ``energy`` object of the original draw-0 result."""
    return json.loads(ORIGINAL_DRAW0.read_text())["energy"]


def log_from_original(energy: dict[str, Any]) -> list[dict[str, Any]]:
    """JSON-lines entries (as ``RecordingBackend`` writes) reproducing the original's readings."""
    hw = energy["hardware"]
    entries: list[dict[str, Any]] = []
    t = [0.0]

    def add(call: str, args: list, value: Any = None, *, error: int | None = None, span: tuple | None = None) -> None:
        start, end = span if span else (t[0], t[0] + 1e-4)
        t[0] = end
        entry = {"seq": len(entries), "channel": "main", "call": call, "args": args}
        entry.update({"error_code": error} if error is not None else {"value": value})
        entry.update({"t_start_s": start, "t_end_s": end})
        entries.append(entry)

    def stamp(s: dict[str, Any]) -> None:
        half = s["query_latency_s"] / 2
        add("nvmlDeviceGetTotalEnergyConsumption", [], s["energy_mj"], span=(s["time_s"] - half, s["time_s"] + half))

    def telemetry(tel: dict[str, Any]) -> None:
        add("nvmlDeviceGetPowerUsage", [], round(tel["power_w"] * 1000))
        add("nvmlDeviceGetTemperature", [0], tel["temperature_c"])
        add("nvmlDeviceGetClockInfo", [0], tel["graphics_clock_mhz"])
        add("nvmlDeviceGetClockInfo", [2], tel["memory_clock_mhz"])
        add("nvmlDeviceGetFieldValues", [[186]], error=3)

    add("nvmlInit", [])
    add("nvmlDeviceGetHandleByPciBusId", [hw["cuda_pci_bus_id"]], "handle")
    add("nvmlDeviceGetPciInfo", [], {"busId": hw["nvml_pci_bus_id"]})
    add("nvmlDeviceGetPowerManagementLimit", [], round(hw["power_limit_w"] * 1000))
    add("nvmlDeviceGetName", [], hw["gpu"])
    add("nvmlDeviceGetUUID", [], hw["uuid"])
    add("nvmlSystemGetDriverVersion", [], hw["driver"])
    for trial in energy["trials"]:
        stamp(trial["idle_before"]["start"])
        stamp(trial["idle_before"]["end"])
        telemetry(trial["telemetry_before"])
        stamp(trial["active"]["start"])
        stamp(trial["active"]["end"])
        telemetry(trial["telemetry_after"])
        stamp(trial["idle_after"]["start"])
        stamp(trial["idle_after"]["end"])
    add("nvmlShutdown", [])
    return entries


def write_log(entries: list[dict[str, Any]], path: Path) -> Path:
    """Write entries as JSON lines."""
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="ascii")
    return path
