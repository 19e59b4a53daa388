"""NVML adapter: error mapping, PCI bus ids, recorder and replay (bundle.nvml, bundle.energy_glue)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from unittest import mock

import pytest

from bundle import energy_glue, nvml
from bundle.energy import recompute_trial
from protocol.errors import BundleError
from tests.bundle.energy_logs import log_from_original, original_energy, write_log

pynvml = pytest.importorskip("pynvml")


class ReplayTimer:
    """Fake device side: each active window returns the original's CUDA time (ms)."""

    def __init__(self, cuda_ms: list[float]) -> None:
        self.cuda_ms = list(cuda_ms)
        self.synchronized = 0

    def run_invocations(self, invocations: int) -> float:
        return self.cuda_ms.pop(0)

    def synchronize(self) -> None:
        self.synchronized += 1


def replay_original(entries: list[dict]) -> tuple[dict, nvml.ReplayBackend]:
    energy = original_energy()
    backend = nvml.ReplayBackend(entries)
    device = nvml.NvmlDevice.open(energy["hardware"]["cuda_pci_bus_id"], backend)
    timer = ReplayTimer([t["cuda_ms_per_task"] * t["invocations"] for t in energy["trials"]])
    with device:
        out = energy_glue.measure_protocol(timer, device, mode="original", calibration_ms=energy["calibration_ms"],
                                           total_memory_bytes=energy["hardware"]["total_memory_bytes"],
                                           clock=backend.clock, sleep=lambda s: None)
    return out, backend


def test_error_codes_match_pynvml() -> None:
    for name in ("UNINITIALIZED", "NOT_SUPPORTED", "NO_PERMISSION", "NOT_FOUND", "DRIVER_NOT_LOADED",
                 "LIBRARY_NOT_FOUND", "FUNCTION_NOT_FOUND", "GPU_IS_LOST"):
        assert getattr(nvml, f"NVML_ERROR_{name}") == getattr(pynvml, f"NVML_ERROR_{name}")
    assert nvml.NVML_FI_DEV_POWER_INSTANT == pynvml.NVML_FI_DEV_POWER_INSTANT
    assert (nvml.NVML_CLOCK_GRAPHICS, nvml.NVML_CLOCK_MEM) == (pynvml.NVML_CLOCK_GRAPHICS, pynvml.NVML_CLOCK_MEM)


def test_pci_bus_ids_compare_as_hex() -> None:
    assert nvml.parse_pci_bus_id("0000:50:00.0") == nvml.parse_pci_bus_id("00000000:50:00.0")
    assert nvml.parse_pci_bus_id("0000:0F:00.0") == nvml.parse_pci_bus_id("00000000:0f:00.0")
    assert nvml.parse_pci_bus_id("0000:0F:00.0") != nvml.parse_pci_bus_id("0000:DA:00.0")
    with pytest.raises(BundleError, match="domain:bus:device.function"):
        nvml.parse_pci_bus_id("GPU-1552a575")


def test_replay_of_original_readings_reproduces_the_original_trials() -> None:
    energy = original_energy()
    out, backend = replay_original(log_from_original(energy))
    assert backend.remaining() == 0
    assert out["repeats_per_trial"] == 104
    assert out["hardware"] == energy["hardware"]
    for got, want in zip(out["trials"], energy["trials"], strict=True):
        for key in ("paired_idle_w", "idle_adjusted_mj_per_task", "unadjusted_mj_per_task", "cuda_ms_per_task",
                    "wall_ms_per_task"):
            assert math.isclose(got[key], want[key], rel_tol=1e-9), key
        assert got["telemetry_after"]["power_w"] == want["telemetry_after"]["power_w"]
        assert got["telemetry_after"]["instant_power_w"] is None  # field 186 did not answer
        assert got["idle_before"]["settle_seconds"] == 3
        assert recompute_trial(got)["idle_adjusted_mj_per_task"] == got["idle_adjusted_mj_per_task"]
    summary = out["summary"]["idle_adjusted_mj_per_task"]
    assert math.isclose(summary["mean"], 1101.2411669370717, rel_tol=1e-9)
    assert math.isclose(summary["sample_sd"], 72.65349894231267, rel_tol=1e-9)


def test_replay_fails_when_the_call_sequence_drifts() -> None:
    entries = log_from_original(original_energy())
    entries[12]["call"] = "nvmlDeviceGetPowerUsage"  # a telemetry read where a stamp is expected
    with pytest.raises(BundleError, match="drifted at main entry 12"):
        replay_original(entries)
    with pytest.raises(BundleError, match="exhausted"):
        replay_original(log_from_original(original_energy())[:20])


def test_replay_of_a_stuck_counter_fails_one_line() -> None:
    entries = log_from_original(original_energy())
    first = next(i for i, e in enumerate(entries) if e["call"] == "nvmlDeviceGetTotalEnergyConsumption")
    entries[first + 1]["value"] = entries[first]["value"]
    with pytest.raises(BundleError, match=r"did not advance over 3\.0.*trial 0 idle_before"):
        replay_original(entries)


def test_recorder_round_trip(tmp_path: Path) -> None:
    source = nvml.ReplayBackend(log_from_original(original_energy()))
    path = tmp_path / "nvml.jsonl"
    recorder = nvml.RecordingBackend(source, path)
    energy = original_energy()
    device = nvml.NvmlDevice.open(energy["hardware"]["cuda_pci_bus_id"], recorder)
    timer = ReplayTimer([1.0, 1.0, 1.0])
    energy_glue.measure_protocol(timer, device, mode="original", calibration_ms=48.0, total_memory_bytes=1,
                                 sleep=lambda s: None)
    device.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["call"] for e in lines] == [e["call"] for e in log_from_original(energy)]
    assert lines[-1]["call"] == "nvmlShutdown" and any("error_code" in e for e in lines)
    assert all(e["channel"] == "main" and e["t_end_s"] >= e["t_start_s"] for e in lines)
    replayed, backend = replay_original(lines)
    assert backend.remaining() == 0 and len(replayed["trials"]) == 3


def _mock_pynvml(**side_effects: object) -> mock.MagicMock:
    fake = mock.create_autospec(pynvml, instance=False)
    fake.NVMLError = pynvml.NVMLError
    fake.nvmlDeviceGetHandleByPciBusId.return_value = object()
    fake.nvmlDeviceGetPciInfo.return_value = mock.Mock(busId=b"00000000:50:00.0")
    fake.nvmlDeviceGetTotalEnergyConsumption.return_value = 123456
    for name, effect in side_effects.items():
        getattr(fake, name).side_effect = effect
    return fake


def _open(fake: mock.MagicMock, bus: str = "0000:50:00.0") -> nvml.NvmlDevice:
    with mock.patch.dict(sys.modules, {"pynvml": fake}):
        return nvml.NvmlDevice.open(bus, nvml.PynvmlBackend())


def test_real_backend_through_mocked_pynvml() -> None:
    fake = _mock_pynvml()
    device = _open(fake)
    assert device.nvml_pci_bus_id == "00000000:50:00.0"
    assert device.read_energy_mj() == 123456
    fake.nvmlDeviceGetHandleByPciBusId.assert_called_once_with(b"0000:50:00.0")
    values = (pynvml.c_nvmlFieldValue_t * 1)()
    values[0].fieldId, values[0].nvmlReturn, values[0].valueType = 186, 0, pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
    values[0].value.uiVal = 131250
    fake.nvmlDeviceGetFieldValues.return_value = values
    assert device.instant_power_w() == 131.25
    values[0].nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
    assert device.instant_power_w() is None
    device.close()
    fake.nvmlShutdown.assert_called_once_with()


@pytest.mark.parametrize(("call", "code", "pattern"), [
    ("nvmlInit", "NVML_ERROR_LIBRARY_NOT_FOUND", "no NVML library"),
    ("nvmlInit", "NVML_ERROR_DRIVER_NOT_LOADED", "driver not loaded"),
    ("nvmlDeviceGetHandleByPciBusId", "NVML_ERROR_NO_PERMISSION", "no permission"),
    ("nvmlDeviceGetHandleByPciBusId", "NVML_ERROR_NOT_FOUND", "device not found"),
])
def test_open_failures_are_one_line(call: str, code: str, pattern: str) -> None:
    fake = _mock_pynvml(**{call: pynvml.NVMLError(getattr(pynvml, code))})
    with pytest.raises(BundleError, match=pattern) as info:
        _open(fake)
    assert "\n" not in str(info.value)
    if call != "nvmlInit":
        fake.nvmlShutdown.assert_called_once_with()  # initialised NVML is shut down again


@pytest.mark.parametrize(("code", "pattern"), [
    ("NVML_ERROR_NOT_SUPPORTED", "energy counter not supported on this GPU"),
    ("NVML_ERROR_NO_PERMISSION", "no permission .*nvmlDeviceGetTotalEnergyConsumption"),
])
def test_energy_counter_failures(code: str, pattern: str) -> None:
    fake = _mock_pynvml(nvmlDeviceGetTotalEnergyConsumption=pynvml.NVMLError(getattr(pynvml, code)))
    device = _open(fake)
    with pytest.raises(BundleError, match=pattern):
        device.read_energy_mj()


def test_bus_id_mismatch_is_refused() -> None:
    fake = _mock_pynvml()
    fake.nvmlDeviceGetPciInfo.return_value = mock.Mock(busId=b"00000000:DA:00.0")
    with pytest.raises(BundleError, match="PCI bus ids differ"):
        _open(fake)


def test_missing_binding_is_one_line() -> None:
    with mock.patch.dict(sys.modules, {"pynvml": None}), pytest.raises(BundleError, match="no NVML python binding"):
        nvml.PynvmlBackend()


def test_open_backend_records_when_env_is_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(nvml.RECORD_ENV, str(tmp_path / "log.jsonl"))
    with mock.patch.dict(sys.modules, {"pynvml": _mock_pynvml()}):
        backend = nvml.open_backend()
        assert isinstance(backend, nvml.RecordingBackend)
        nvml.NvmlDevice.open("0000:50:00.0", backend).close()
    calls = [json.loads(x)["call"] for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert calls == ["nvmlInit", "nvmlDeviceGetHandleByPciBusId", "nvmlDeviceGetPciInfo", "nvmlShutdown"]


def test_trial_mode_samples_instant_power_in_the_background() -> None:
    class FakeDevice:
        def __init__(self) -> None:
            self.mj = 0

        def read_energy_mj(self) -> int:
            self.mj += 1300
            return self.mj

        def telemetry(self):
            from bundle.energy import Telemetry

            return Telemetry(30, 125.0, 1980, 2619, 126.0)

        def instant_power_w(self) -> float:
            return 126.0

        def hardware_record(self, total_memory_bytes: int) -> dict:
            return {"gpu": "fake", "uuid": "GPU-x", "total_memory_bytes": total_memory_bytes}

    import time

    out = energy_glue.measure_protocol(ReplayTimer([400.0]), FakeDevice(), mode="trial", calibration_ms=40.0,
                                       total_memory_bytes=1,
                                       settings={"settle_seconds": 0.0, "idle_seconds": 0.2, "active_seconds": 0.4,
                                                 "sample_interval_s": 0.01, "workspace_config": ":16:8"},
                                       sleep=time.sleep)
    trial = out["trials"][0]
    assert out["repeats_per_trial"] == 10 and trial["cuda_ms_per_task"] == 40.0
    assert len(trial["power_samples"]) >= 5 and trial["power_samples"][0]["power_w"] == 126.0
    assert out["settings"]["align_stamps"] is True
    with pytest.raises(BundleError, match="unknown energy settings"):
        energy_glue.measure_protocol(ReplayTimer([1.0]), FakeDevice(), mode="trial", calibration_ms=40.0,
                                     total_memory_bytes=1, settings={"activ_seconds": 1})


@pytest.mark.gpu
def test_nvml_on_the_device(tmp_path: Path) -> None:
    import torch

    bus = energy_glue.cuda_pci_bus_id(torch.cuda.current_device())
    device = nvml.NvmlDevice.open(bus, nvml.open_backend(tmp_path / "nvml.jsonl"))
    try:
        hw = device.hardware_record(torch.cuda.get_device_properties(0).total_memory)
        first = device.read_energy_mj()
        import time

        time.sleep(0.5)
        assert device.read_energy_mj() > first
        print(hw, device.telemetry(), device.instant_power_w())
    finally:
        device.close()


def test_replay_from_file(tmp_path: Path) -> None:
    path = write_log(log_from_original(original_energy()), tmp_path / "original-draw0.nvml.jsonl")
    backend = nvml.ReplayBackend.from_file(path)
    device = nvml.NvmlDevice.open("0000:50:00.0", backend)
    assert device.hardware_record(1)["uuid"] == "GPU-1552a575-ab47-76b8-3221-83dd4cb89278"
    assert device.read_energy_mj() == 18341121604
