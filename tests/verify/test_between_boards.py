"""Several energy designs (one per board) and their between-board spread.

The two-board archive is made from the real single-board one: its 15 interleaved trial records are
copied as a second design on another board id (``-b01`` stems, the board's uuid and bus id
changed in every place that names it), then the writer's own summary and spread functions are
applied and the manifest rebuilt. The verifier must pass it and fail each forgery of the spread.
"""

from __future__ import annotations

import copy
import gzip
import shutil
from pathlib import Path

import pytest

from bundle import archive
from bundle.phases import energy as phase
from protocol.errors import BundleError
from tests.conftest import REPO_ROOT, linked_copy
from verify.registry import verify_archive

ARCHIVE = REPO_ROOT / "evidence" / "h200-20261202"
OTHER = {"uuid": "GPU-0b0b0b0b-1111-2222-3333-444444444444", "bus": "00000000:07:00.0"}


def _swap(obj, old: str, new: str):
    if isinstance(obj, dict):
        return {k: _swap(v, old, new) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_swap(v, old, new) for v in obj]
    return new if obj == old else obj


def two_board_archive(tmp_path: Path) -> Path:
    root = linked_copy(ARCHIVE, tmp_path)
    first = archive.read_json_gz(root / "energy/interleaved.json.gz")
    uuid, bus = first["gpu"]["uuid"], first["gpu"]["nvml_pci_bus_id"]
    records = []
    for t in first["trials"]:
        stem = t["record"][: -len(".json.gz")]
        rec = _swap(_swap(archive.read_json_gz(root / "energy" / t["record"]), uuid, OTHER["uuid"]), bus, OTHER["bus"])
        rec = _swap(rec, bus[4:], OTHER["bus"][4:])  # the CUDA form of the bus id (4-digit domain)
        shutil.copyfile(root / "energy" / rec["predictions_file"], root / "energy" / f"{stem}-b01.predictions.npy")
        rec["predictions_file"] = f"{stem}-b01.predictions.npy"
        archive.write_json_gz(root / "energy" / f"{stem}-b01.json.gz", rec)
        shutil.copyfile(root / "energy" / f"{stem}.energy-config.json", root / "energy" / f"{stem}-b01.energy-config.json")
        log = root / "energy" / f"{stem}.nvml.jsonl.gz"
        if log.is_file():  # the trial's NVML log, read on the other board
            text = (gzip.decompress(log.read_bytes()).decode().replace(uuid, OTHER["uuid"]).replace(bus, OTHER["bus"])
                    .replace(bus[4:], OTHER["bus"][4:]))
            archive.write_bytes_gz(root / "energy" / f"{stem}-b01.nvml.jsonl.gz", text.encode())
        records.append((t["round"], t["workspace"], f"{stem}-b01", rec))
    second = phase._interleaved_summary(records, first["settings"], root / "energy", first["draw_index"])
    second["completed_at_utc"] = first["completed_at_utc"]  # as if written within the phase's span
    archive.write_json_gz(root / "energy/interleaved-b01.json.gz", second)
    spread = phase.between_boards([first, second]) | {"completed_at_utc": first["completed_at_utc"]}
    archive.write_json_gz(root / "energy/between-boards.json.gz", spread)
    env = archive.read_json_gz(root / "environment.json.gz")
    extra = [_swap(copy.deepcopy(e), uuid, OTHER["uuid"]) | {"phases": ["energy"]}
             for e in env["executions"] if "energy" in e["phases"]]
    env["executions"] += extra
    for inv in env["reproduce_invocations"]:
        if inv["boards"]:
            inv["boards"].append({"index": 1, "uuid": OTHER["uuid"], "pci_bus_id": OTHER["bus"], "name": "NVIDIA H200"})
    (root / "environment.json.gz").unlink()
    archive.write_json_gz(root / "environment.json.gz", env)
    (root / "manifest.json").unlink()
    archive.RunArchive(root).write_manifest()
    return root


def _fails(root: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in verify_archive(root).results:
        if r.status.value == "FAIL":
            out.setdefault(r.check_id, []).append(r.subject)
    return out


def test_between_boards_refuses_one_board() -> None:
    first = archive.read_json_gz(ARCHIVE / "energy/interleaved.json.gz")
    with pytest.raises(BundleError, match="two distinct boards"):
        phase.between_boards([first, first])


def test_two_board_archive_verifies_and_spread_forgeries_fail(tmp_path: Path, hidden_ncu_report: None) -> None:
    root = two_board_archive(tmp_path / "ok")
    assert _fails(root) == {}
    spread = archive.read_json_gz(root / "energy/between-boards.json.gz")
    assert spread["spread_of_means"][":4096:8"]["idle_adjusted_mj_per_task"]["sample_sd"] == 0.0  # same figures copied
    spread["per_board_idle_adjusted_ratio_vs_baseline"][":16:8"][1] *= 1.01
    (root / "energy/between-boards.json.gz").unlink()
    archive.write_json_gz(root / "energy/between-boards.json.gz", spread)
    (root / "manifest.json").unlink()
    archive.RunArchive(root).write_manifest()
    assert "energy.between_boards" in _fails(root)


def test_second_design_without_spread_fails(tmp_path: Path, hidden_ncu_report: None) -> None:
    root = two_board_archive(tmp_path / "nospread")
    (root / "energy/between-boards.json.gz").unlink()
    (root / "manifest.json").unlink()
    archive.RunArchive(root).write_manifest()
    assert "energy.between_boards" in _fails(root)
