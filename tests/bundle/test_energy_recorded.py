"""Replay of a REAL NVML log recorded on the H200 drives the energy protocol without a GPU.

``tests/recorded/nvml/h200-trial-r00-workspace-16-8.jsonl`` is the NVML log that
``rev88 energy --protocol interleaved --record-nvml`` wrote for round 0 at ``:16:8`` (shipped in
``evidence/h200-20261202/energy/trial-r00-workspace-16-8.nvml.jsonl.gz``). Replaying it through
the real protocol code must reproduce the trial figures that the run archived, to within the
recorder's clock placement: the recorder stamps each NVML call from inside the adapter, while the
protocol reads its clock just outside it, so replayed midpoints move by microseconds (relative
error ~1e-6 on an 8 s window; 1e-5 is the bound used here, 0.05 mJ/task after the idle subtraction).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bundle import archive, energy_glue, nvml
from bundle.energy import recompute_trial
from protocol.errors import BundleError

REPO = Path(__file__).resolve().parents[2]
LOG = REPO / "tests" / "recorded" / "nvml" / "h200-trial-r00-workspace-16-8.jsonl"
RECORD = REPO / "evidence" / "h200-20261202" / "energy" / "trial-r00-workspace-16-8.json.gz"


class RecordedTimer:
    """Device side of the replay: each active window returns the archived CUDA time (ms)."""

    def __init__(self, cuda_ms: list[float]) -> None:
        self.cuda_ms = list(cuda_ms)

    def run_invocations(self, invocations: int) -> float:
        return self.cuda_ms.pop(0)

    def synchronize(self) -> None:
        pass


def _replay(backend: nvml.ReplayBackend) -> tuple[dict, dict]:
    energy = archive.read_json_gz(RECORD)["energy"]
    settings = {k: v for k, v in energy["settings"].items() if k != "mode"}
    timer = RecordedTimer([t["cuda_elapsed_ms"] for t in energy["trials"]])
    device = nvml.NvmlDevice.open(energy["hardware"]["cuda_pci_bus_id"], backend)
    with device:
        out = energy_glue.measure_protocol(timer, device, mode="trial", calibration_ms=energy["calibration_ms"],
                                           total_memory_bytes=energy["hardware"]["total_memory_bytes"],
                                           settings=settings, clock=backend.clock, sleep=lambda s: None,
                                           sample_power=False)
    return out, energy


def test_real_h200_log_replays_to_the_archived_trial() -> None:
    out, energy = _replay(nvml.ReplayBackend.from_file(LOG))
    assert out["repeats_per_trial"] == energy["repeats_per_trial"]
    assert out["hardware"]["gpu"] == energy["hardware"]["gpu"] == "NVIDIA H200"
    (got,), (want,) = out["trials"], energy["trials"]
    for key in ("paired_idle_w", "unadjusted_mj_per_task", "cuda_ms_per_task", "wall_ms_per_task"):
        assert math.isclose(got[key], want[key], rel_tol=1e-5), (key, got[key], want[key])
    # The idle subtraction amplifies the clock-placement shift (~1e-4 W of ~125 W over ~8 s):
    # 0.05 mJ/task is 0.016 % of the ~320 mJ/task figure.
    assert abs(got["idle_adjusted_mj_per_task"] - want["idle_adjusted_mj_per_task"]) < 0.05
    for window in ("idle_before", "active", "idle_after"):
        for end in ("start", "end"):
            assert got[window][end]["energy_mj"] == want[window][end]["energy_mj"], (window, end)
    assert recompute_trial(got)["idle_adjusted_mj_per_task"] == pytest.approx(got["idle_adjusted_mj_per_task"],
                                                                              rel=1e-12)


def test_real_h200_log_with_a_missing_call_drifts() -> None:
    entries = nvml.ReplayBackend.from_file(LOG)
    main = entries.queues["main"]
    telemetry = [i for i, e in enumerate(main) if e["call"] == "nvmlDeviceGetTemperature"]
    assert telemetry, "the recorded log holds telemetry readings"
    del main[telemetry[0]]
    with pytest.raises(BundleError, match="replay"):
        _replay(entries)
