"""The energy phase through a fake engine whose 'fixture' runs the real protocol code on a fake device."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from bundle import archive, energy_glue
from bundle.boards import LOCK_ENV, TICKET_ENV
from bundle.energy import Telemetry
from bundle.jobs import JobResult, JobSpec
from bundle.phases import energy as phase
from protocol.errors import BundleError

# Extra power (W) each workspace config draws while active, to be recovered by the phase.
EXTRA_W = {":4096:8": 6.0, ":16:8": 6.3, ":0:0": 5.7}


class SimDevice:
    """Counter integrating 125 W idle plus the config's extra W while 'active' (simulated clock)."""

    def __init__(self, now: list[float], extra_w: float, uuid: str) -> None:
        self.now, self.extra_w, self.uuid = now, extra_w, uuid
        self.energy_j, self.last, self.active = 0.0, now[0], False

    def _advance(self) -> None:
        self.energy_j += (self.now[0] - self.last) * (125.0 + (self.extra_w if self.active else 0.0))
        self.last = self.now[0]

    def read_energy_mj(self) -> int:
        self._advance()
        return 10_000_000 + int(self.energy_j * 1000)

    def telemetry(self) -> Telemetry:
        return Telemetry(30, 125.0, 1980, 2619, 125.0)

    def instant_power_w(self) -> None:
        return None

    def hardware_record(self, total_memory_bytes: int) -> dict:
        return {"gpu": "Sim H200", "uuid": self.uuid, "total_memory_bytes": total_memory_bytes,
                "nvml_pci_bus_id": "00000000:19:00.0"}


class SimTimer:
    def __init__(self, now: list[float], device: SimDevice) -> None:
        self.now, self.device = now, device

    def run_invocations(self, n: int) -> float:
        self.device._advance()
        self.device.active = True
        self.now[0] += n * 0.030
        self.device._advance()
        self.device.active = False
        return n * 30.0

    def synchronize(self) -> None:
        pass


class FakeFixtureEngine:
    """Runs 'fixture' jobs in-process: the real measure_protocol over SimDevice, then a record."""

    kind = "native"

    def __init__(self, uuids: list[str] | None = None) -> None:
        self.specs: list[JobSpec] = []
        self.uuids = uuids

    def run(self, spec: JobSpec, *, on_line=None) -> JobResult:
        self.specs.append(spec)
        argv = list(spec.argv)
        opt = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
        ws = spec.env["CUBLAS_WORKSPACE_CONFIG"]
        now = [100.0 * len(self.specs)]
        uuid = self.uuids[len(self.specs) - 1] if self.uuids else "GPU-sim"
        device = SimDevice(now, EXTRA_W[ws], uuid)

        def sleep(s: float) -> None:
            now[0] += s

        settings = json.loads(Path(opt["--energy-config"]).read_text())
        energy = energy_glue.measure_protocol(SimTimer(now, device), device, mode=opt["--energy"],
                                              calibration_ms=30.0, total_memory_bytes=1, settings=settings,
                                              clock=lambda: now[0], sleep=sleep, sample_power=False)
        record = {"input_archive_sha256": archive.file_sha256(opt["--input"]), "cublas_workspace_config": ws,
                  "energy": energy, "execution": {"engine": "fake"}}
        if opt.get("--learner", "rev88") != "rev88":
            record["learner"] = {"name": opt["--learner"], "kernel_source_sha256": "ab" * 32,
                                 "triton_version": "3.5.0", "interpreter": False}
        archive.write_json_gz(opt["--output"], record)
        return JobResult(spec.name, 0, "", "", 0.1)


INPUTS = {"train_images": np.zeros((4, 1, 9, 9), np.float32), "train_labels": np.zeros(4, np.int64),
          "test_images": np.zeros((2, 1, 9, 9), np.float32)}
CONFIG = {"depth": 2, "epochs": 2}


def test_rotating_order() -> None:
    order = phase.interleaved_order(3)
    assert [ws for _, ws in order] == [":4096:8", ":16:8", ":0:0", ":16:8", ":0:0", ":4096:8", ":0:0",
                                       ":4096:8", ":16:8"]


def test_interleaved_then_original(tmp_path: Path) -> None:
    engine = FakeFixtureEngine()
    result = phase.run_energy(tmp_path, engine=engine, protocol="interleaved", rounds=3, inputs=INPUTS,
                              config=CONFIG, active_seconds=6.0, idle_seconds=2.0, settle_seconds=1.0)
    assert len(engine.specs) == 9
    assert all(s.env["CUBLAS_WORKSPACE_CONFIG"] in EXTRA_W and "--energy" in s.argv for s in engine.specs)
    inter = archive.read_json_gz(tmp_path / "energy" / "interleaved.json.gz")
    assert inter["summaries"] == json.loads(json.dumps(result["interleaved"]["summaries"]))
    for ws, extra in EXTRA_W.items():
        s = inter["summaries"][ws]["idle_adjusted_mj_per_task"]
        assert s["count"] == 3
        assert math.isclose(s["mean"], extra * 30.0, rel_tol=0.02), (ws, s["mean"])  # W x 30 ms = mJ/task
    ratio = inter["ratios_vs_baseline"][":16:8"]["idle_adjusted_mj_per_task"]
    assert math.isclose(ratio["ratio"], 6.3 / 6.0, rel_tol=0.03)
    assert (tmp_path / "energy" / "trial-r02-workspace-0-0.json.gz").is_file()
    # Adding the original protocol keeps the interleaved files.
    phase.run_energy(tmp_path, engine=engine, protocol="original", inputs=INPUTS, config=CONFIG)
    assert (tmp_path / "energy" / "interleaved.json.gz").is_file()
    original = archive.read_json_gz(tmp_path / "energy" / "original.json.gz")["energy"]
    assert len(original["trials"]) == 3 and original["repeats_per_trial"] == 167  # ceil(5000 / 30)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert {"energy/original.json.gz", "energy/interleaved.json.gz"} <= {f["path"] for f in manifest["files"]}
    with pytest.raises(BundleError, match="already complete"):
        phase.run_energy(tmp_path, engine=engine, protocol="original", inputs=INPUTS, config=CONFIG)


def test_trials_on_different_gpus_are_refused(tmp_path: Path) -> None:
    engine = FakeFixtureEngine(uuids=["GPU-a", "GPU-b"] * 3)
    with pytest.raises(BundleError, match="different GPUs"):
        phase.run_energy(tmp_path, engine=engine, rounds=2, inputs=INPUTS, config=CONFIG, active_seconds=5.0,
                         idle_seconds=1.0, settle_seconds=0.0)
    assert not (tmp_path / "energy").exists()


def test_bad_settings_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="need rounds >= 2"):
        phase.run_energy(tmp_path, engine=FakeFixtureEngine(), rounds=1, inputs=INPUTS, config=CONFIG)
    with pytest.raises(BundleError, match="unknown --protocol"):
        phase.run_energy(tmp_path, engine=FakeFixtureEngine(), protocol="fast", inputs=INPUTS, config=CONFIG)


def test_cli_reports_bad_protocol_in_one_line(tmp_path: Path) -> None:
    from bundle.cli import app

    res = CliRunner().invoke(app, ["energy", "--out", str(tmp_path), "--protocol", "fast"])
    assert res.exit_code == 2
    assert "rev88: error: unknown --protocol 'fast'" in res.output and "Traceback" not in res.output


def test_learners_order_and_stems() -> None:
    order = phase.learners_order(3)
    assert [arm for _, arm in order[:3]] == [("rev88", ":16:8"), ("rev88", ":0:0"), ("rev88-fused", ":16:8")]
    assert [arm for _, arm in order[3:6]] == [("rev88", ":0:0"), ("rev88-fused", ":16:8"), ("rev88", ":16:8")]
    assert [arm for _, arm in order[6:]] == [("rev88-fused", ":16:8"), ("rev88", ":16:8"), ("rev88", ":0:0")]
    stems = [phase.learners_trial_stem(r, *arm) for r, arm in order]
    assert stems[:3] == ["trial-r00-rev88-workspace-16-8", "trial-r00-rev88-workspace-0-0",
                         "trial-r00-rev88-fused-workspace-16-8"]
    interleaved = {phase.trial_stem(r, ws) for r, ws in phase.interleaved_order(3)}
    assert len(set(stems)) == 9 and not interleaved & set(stems)


def test_learners_after_interleaved_in_one_folder(tmp_path: Path) -> None:
    engine = FakeFixtureEngine()
    phase.run_energy(tmp_path, engine=engine, protocol="interleaved", rounds=2, inputs=INPUTS, config=CONFIG,
                     active_seconds=5.0, idle_seconds=1.0, settle_seconds=0.0)
    result = phase.run_energy(tmp_path, engine=engine, protocol="learners", rounds=2, inputs=INPUTS, config=CONFIG,
                              active_seconds=5.0, idle_seconds=1.0, settle_seconds=0.0)
    runs = sorted(engine.specs[6:], key=lambda s: int(s.env[TICKET_ENV]))  # the lock's queue: design order
    assert [int(s.env[TICKET_ENV]) for s in runs] == list(range(6))
    assert [("--learner" in s.argv, s.env["CUBLAS_WORKSPACE_CONFIG"]) for s in runs[:3]] == [
        (False, ":16:8"), (False, ":0:0"), (True, ":16:8")]
    assert all(s.env.get(LOCK_ENV, "").endswith("gpu-default.lock") and "--energy" in s.argv for s in runs)
    summary = archive.read_json_gz(tmp_path / "energy" / "learners.json.gz")
    assert summary["protocol"] == "learners" and summary["baseline"] == "rev88 :16:8"
    assert [a["label"] for a in summary["arms"]] == ["rev88 :16:8", "rev88 :0:0", "rev88-fused :16:8"]
    assert summary["arms"][2]["learner_block"]["kernel_source_sha256"] == "ab" * 32
    assert summary["arms"][0]["learner_block"] is None
    assert set(summary["ratios_vs_baseline"]) == {"rev88 :0:0", "rev88-fused :16:8"}
    s0 = summary["summaries"]["rev88 :0:0"]["idle_adjusted_mj_per_task"]
    assert s0["count"] == 2 and math.isclose(s0["mean"], EXTRA_W[":0:0"] * 30.0, rel_tol=0.02)
    ratio = summary["ratios_vs_baseline"]["rev88 :0:0"]["idle_adjusted_mj_per_task"]["ratio"]
    assert math.isclose(ratio, 5.7 / 6.3, rel_tol=0.03)
    assert summary["summaries"] == json.loads(json.dumps(result["learners"]["summaries"]))
    assert (tmp_path / "energy" / "interleaved.json.gz").is_file()
    assert (tmp_path / "energy" / "trial-r01-rev88-fused-workspace-16-8.json.gz").is_file()
    assert (tmp_path / "energy" / "trial-r01-workspace-16-8.json.gz").is_file()


def test_learners_record_of_another_learner_is_refused(tmp_path: Path) -> None:
    class IgnoresLearner(FakeFixtureEngine):
        def run(self, spec: JobSpec, *, on_line=None) -> JobResult:
            return super().run(dataclasses.replace(spec, argv=tuple(a for a in spec.argv if a not in
                                                                    ("--learner", "rev88-fused"))))
    with pytest.raises(BundleError, match="expected 'rev88-fused'"):
        phase.run_energy(tmp_path, engine=IgnoresLearner(), protocol="learners", rounds=2, inputs=INPUTS,
                         config=CONFIG, active_seconds=5.0, idle_seconds=1.0, settle_seconds=0.0)


def test_learners_refuses_several_boards(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="one board, got 2 boards"):
        phase.run_energy(tmp_path, engine=FakeFixtureEngine(), protocol="learners", inputs=INPUTS, config=CONFIG,
                         boards=("board-a", "board-b"))
    assert not (tmp_path / "energy").exists()


def test_cli_unknown_protocol_lists_learners(tmp_path: Path) -> None:
    from bundle.cli import app

    res = CliRunner().invoke(app, ["energy", "--out", str(tmp_path), "--protocol", "learner"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "unknown --protocol 'learner': use original, interleaved, both, learners" in res.output


@pytest.mark.gpu
def test_original_protocol_on_the_device(tmp_path: Path) -> None:
    from bundle.jobs import SubprocessEngine

    result = phase.run_energy(tmp_path, engine=SubprocessEngine(), protocol="original", record_nvml=True)
    s = result["original"]["summaries"]["idle_adjusted_mj_per_task"]
    print(result["original"])
    assert s["count"] == 3 and s["mean"] > 0
    assert (tmp_path / "energy" / "original.nvml.jsonl.gz").is_file()


@pytest.mark.parametrize("window", ["active_seconds", "idle_seconds", "settle_seconds"])
def test_non_finite_windows_are_refused_before_anything_is_written(tmp_path: Path, window: str) -> None:
    from bundle.phases.energy import run_energy

    with pytest.raises(BundleError, match="give finite seconds"):
        run_energy(tmp_path / "run", engine=None, protocol="learners", **{window: float("nan")})
    assert not (tmp_path / "run").exists()
