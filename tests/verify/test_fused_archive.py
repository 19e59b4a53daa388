"""The kept rev88-fused run archives, both made with the CUDA kernel tool on one H200 each:
evidence/h200-fused-cuda-20261204e (kernel source 0ac8be88…, G = 2 unsplit inside the cluster, 12 warps: the least
energy) and evidence/h200-fused-cuda-20261205 (9da9db69…, G = 8 split inside the cluster, the pulled exchange,
12 warps: the least time). Each holds the variant's qualification (11 draws), the learners energy design (rev88
:16:8, rev88 :0:0, rev88-fused; K = 4) and its profile phase (``--learner rev88-fused``): verified with 0 FAIL,
forgeries caught. The variant has no frozen inventory or self-test; each forgery below rewrites one record
consistently (the manifest is rebuilt) and must FAIL the named check. The fused learner's Triton tool has no kept
archive: the checks only it reaches (product slices, the grid kernel's buffers) are forged onto these records or
tested on their functions.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO_ROOT, check_statuses, forge_record, linked_copy

G2_ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-cuda-20261204e"  # 0ac8be88…, G = 2 unsplit cluster
G8_ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-cuda-20261205"  # 9da9db69…, G = 8 split cluster, pulled exchange
FROZEN_DRAW0 = REPO_ROOT / "evidence" / "rev88-original" / "results" / "draw-00.json"
TRIAL = "energy/trial-r{:02d}-rev88-fused-workspace-16-8.json.gz"
pytestmark = pytest.mark.skipif(not G2_ARCHIVE.is_dir() or not G8_ARCHIVE.is_dir(),
                                reason="the shipped fused archives are absent")


@pytest.mark.parametrize(("archive", "programs", "rounds"), [(G2_ARCHIVE, 2, 4), (G8_ARCHIVE, 8, 4)],
                         ids=["cuda-cluster-g2", "cuda-cluster-split-g8"])
def test_shipped_fused_archive_verifies_and_its_predictions_are_the_frozen_ones(archive: Path, programs,
                                                                                rounds: int) -> None:
    statuses = check_statuses(archive)
    assert not [c for c, s in statuses.items() if "FAIL" in s]
    for check in ("metadata.selftest", "memory.inventory.structure.fused", "profile.summary.learner",
                  "qualify.record.fresh_process", "placement.gpu_lock", "energy.learners.train_programs",
                  "energy.learners.metadata_block", "energy.learners.inventory_shape",
                  "energy.learners.product_slices", "energy.learners.product_slices.form",
                  "energy.learners.product_precision", "energy.learners.product_precision.form",
                  "energy.learners.kernel_tool", "energy.learners.kernel_tool.form", "energy.learners.cuda_shape",
                  "energy.learners.cuda_buffers", "profile.cuda_launch"):
        assert statuses.get(check) == {"PASS"}, (check, statuses.get(check))
    # made before archives carried their kernel source: the verifier's legacy layout, never a PASS of the source
    assert statuses.get("energy.learners.kernel_source") == {"UNAVAILABLE"}
    frozen = json.loads(FROZEN_DRAW0.read_text())["metadata"]["predictions_sha256"]
    with gzip.open(archive / "energy" / "learners.json.gz") as fh:
        design = json.load(fh)
    fused_trials = [t for t in design["trials"] if t["learner"] == "rev88-fused"]
    assert len(fused_trials) == rounds
    for trial in fused_trials:
        rel = archive / "energy" / trial["record"]
        rec = json.loads(gzip.decompress(rel.read_bytes()))
        assert rec["learner"]["name"] == "rev88-fused" and rec["metadata"]["predictions_sha256"] == frozen
        assert rec["learner"].get("train_programs") == programs and rec["learner"].get("kernel_tool") == "cuda"
        preds = np.load(str(rel).replace(".json.gz", ".predictions.npy"), allow_pickle=False)
        assert preds.shape == (10_000,) and preds.dtype == np.int64


def _validation(rec: dict) -> None:
    rec["metadata"]["validation"] = {"passed": True}


def _timing_scope(rec: dict) -> None:
    rec["metadata"]["timing_scope"] = "run = one CUDA graph replay"


def _named_bytes(rec: dict) -> None:
    rec["fixture"]["unique_named_storage_bytes"] += 4096


def _inventory(rec: dict) -> None:
    rec["buffer_inventory"]["named_tensors"][0]["shape"] = [1, 2, 3]


def _metadata_says_rev88(rec: dict) -> None:
    rec["metadata"].pop("learner")  # the record says fused, its metadata the frozen learner


def _summary_learner(rec: dict) -> None:
    rec["learner"] = None  # a fused profile passed off as the frozen learner's


def _metadata_one_program(rec: dict) -> None:
    rec["metadata"]["learner"]["train_programs"] = 1  # the block still says 8




def _more_programs_than_sms(rec: dict) -> None:
    rec["learner"]["train_programs"] = rec["metadata"]["learner"]["train_programs"] = 9999


def _one_program(rec: dict) -> None:
    """A single-CTA trial slipped into the grid archive: its block says 1 program, the rest 8."""
    rec["learner"]["train_programs"] = 1
    rec["metadata"]["learner"]["train_programs"] = 1


def _other_slices(rec: dict) -> None:
    """One trial summed in another order (slices of 32, the whole tile) than the rest of the archive."""
    rec["metadata"]["learner"]["product_slices"] = {"features": 32, "rows": 32, "feature_extent": 64}


def _energy_metadata_slices(rec: dict) -> None:
    """The trial's before/after metadata say slices of 32 while its metadata says 16."""
    for key in ("before_metadata", "after_metadata"):
        rec["energy"][key]["learner"]["product_slices"] = {"features": 32, "rows": 32, "feature_extent": 64}


def _extent_too_short(rec: dict) -> None:
    """Slices summing 32 features only, which would drop live features 32…40."""
    rec["metadata"]["learner"]["product_slices"] = {"features": 16, "rows": 32, "feature_extent": 32}


def _tensor_core_trial(rec: dict) -> None:
    """One trial names tensor-core products (block and metadata agree); the rest of the archive ran float32 FMAs."""
    rec["learner"]["product_precision"] = rec["metadata"]["learner"]["product_precision"] = "tf32x3"


def _unknown_precision(rec: dict) -> None:
    rec["fixture"]["learner"]["product_precision"] = rec["metadata"]["learner"]["product_precision"] = "tf32"


def _metadata_other_precision(rec: dict) -> None:
    rec["fixture"]["learner"]["product_precision"] = "tf32x3"
    rec["metadata"]["learner"]["product_precision"] = "ieee"


def _triton_trial_in_cuda_archive(rec: dict) -> None:
    """One trial of the CUDA archive relabelled as the Triton tool (block and metadata agree)."""
    for block in (rec["learner"], rec["metadata"]["learner"]):
        block["kernel_tool"] = "triton"


def _cuda_rows_off(rec: dict) -> None:
    """rows_per_program that ceil(128 / G) does not give (block and metadata agree)."""
    for block in (rec["fixture"]["learner"], rec["metadata"]["learner"]):
        block["rows_per_program"] = 32


def _cuda_names_triton(rec: dict) -> None:
    for block in (rec["fixture"]["learner"], rec["metadata"]["learner"]):
        block["triton_version"] = "3.6.0"


def _cuda_inventory_as_triton(rec: dict) -> None:
    """A CUDA record whose inventory has the Triton grid kernel's buffers instead of its own."""
    for t in rec["buffer_inventory"]["named_tensors"]:
        if t.get("name") == "partials":
            t["name"] = "state_map"






def _cuda_cluster_denied(rec: dict) -> None:
    """cluster_update false on a record of the cluster update: the inventory's one-float partials say otherwise."""
    for block in (rec["learner"], rec["metadata"]["learner"]):
        block["cluster_update"] = False




def _cuda_cluster_split_published(rec: dict) -> None:
    """The split cluster update (possible for 352ca9b5…) claimed with the grid split's 7,554-float published
    buffer, which the cluster never allocates."""
    for block in (rec["learner"], rec["metadata"]["learner"]):
        block["split_update"] = True
    for t in rec["buffer_inventory"]["named_tensors"]:
        if t.get("name") == "published":
            t["shape"] = [7554]


def _cuda_cluster_of_sixteen(rec: dict) -> None:
    """16 blocks (8 rows each) claimed for the cluster update: more than a portable cluster holds."""
    for block in (rec["fixture"]["learner"], rec["metadata"]["learner"]):
        block["train_programs"], block["rows_per_program"] = 16, 8


def _cuda_cluster_on_an_a100(rec: dict) -> None:
    """The cluster update on compute capability 8.0, which has no thread-block clusters."""
    rec["fixture"]["hardware"]["compute_capability"] = "8.0"


def _cuda_cluster_not_a_bool(rec: dict) -> None:
    for block in (rec["learner"], rec["metadata"]["learner"]):
        block["cluster_update"] = "yes"




def _cuda_cluster_field_dropped(rec: dict) -> None:
    """A record of a cluster source without cluster_update, as if made before the field existed."""
    for block in (rec["fixture"]["learner"], rec["metadata"]["learner"]):
        block.pop("cluster_update")


def _cuda_no_cupy(rec: dict) -> None:
    for block in (rec["fixture"]["learner"], rec["metadata"]["learner"]):
        block["cupy"] = None


def _cuda_threads_of_the_row_group_kernel(rec: dict) -> None:
    """264 threads (44 x 6, a shape of the first CUDA kernel, not whole warps) on a record of the warp kernel."""
    for block in (rec["learner"], rec["metadata"]["learner"]):
        block["train_threads"] = 264




def _energy_copies_other_source(rec: dict) -> None:
    """The learner copies taken around the trial's invocations name another source and 512 threads."""
    for key in ("before_metadata", "after_metadata"):
        block = rec["energy"][key]["learner"]
        block["kernel_source_sha256"] = "1aa5e64521fd65d8a5a92608fe408dd7e159b7af68cce217a0215f8d0c9c7370"
        block["train_threads"] = 512


def _energy_copy_other_launch(rec: dict) -> None:
    """Only the after-trial copy says another launch (Triton, 64 programs, split)."""
    block = rec["energy"]["after_metadata"]["learner"]
    block.update(kernel_tool="triton", train_programs=64, split_update=True, cluster_update="yes")


def _previous_source(rec: dict) -> None:
    """One record names the source before (ac5da96b…: the same layout and bits, a plain cluster arrive)."""
    for block in (rec["fixture"]["learner"], rec["metadata"]["learner"]):
        block["kernel_source_sha256"] = "ac5da96b62fbfa7e05987c1c652aed55fc985a2d8061bbc54d7b9a247eb2ba46"


def _exchange_dropped(rec: dict) -> None:
    """A record of 9da9db69… (a source with the pushed exchange) that names no exchange: it could have run either."""
    for block in (rec["fixture"]["learner"], rec["metadata"]["learner"]):
        block.pop("exchange", None)


def _unknown_tool(rec: dict) -> None:
    for block in (rec["learner"], rec["metadata"]["learner"]):
        block["kernel_tool"] = "cupy"


@pytest.mark.parametrize(("archive", "rel", "change", "check"), [
    (G2_ARCHIVE, TRIAL.format(1), _triton_trial_in_cuda_archive, "energy.learners.kernel_tool"),
    (G2_ARCHIVE, TRIAL.format(2), _unknown_tool, "energy.learners.kernel_tool.form"),
    (G2_ARCHIVE, "qualify/draw-03.json.gz", _cuda_rows_off, "energy.learners.cuda_shape"),
    (G2_ARCHIVE, "qualify/draw-04.json.gz", _cuda_names_triton, "energy.learners.cuda_shape"),
    (G2_ARCHIVE, TRIAL.format(3), _cuda_inventory_as_triton, "energy.learners.inventory_shape"),
    (G2_ARCHIVE, "qualify/draw-05.json.gz", _cuda_no_cupy, "energy.learners.cuda_shape"),
    (G2_ARCHIVE, TRIAL.format(1), _cuda_threads_of_the_row_group_kernel, "energy.learners.cuda_shape"),
    (G2_ARCHIVE, "qualify/draw-01.json.gz", _cuda_cluster_field_dropped, "energy.learners.cuda_shape"),
    (G2_ARCHIVE, TRIAL.format(3), _cuda_cluster_denied, "energy.learners.cuda_buffers"),
    (G2_ARCHIVE, TRIAL.format(2), _cuda_cluster_not_a_bool, "energy.learners.cuda_shape"),
    (G2_ARCHIVE, TRIAL.format(1), _energy_copies_other_source, "energy.learners.energy_metadata"),
    (G2_ARCHIVE, TRIAL.format(2), _energy_copy_other_launch, "energy.learners.energy_metadata"),
    (G2_ARCHIVE, TRIAL.format(2), _cuda_cluster_split_published, "energy.learners.cuda_buffers"),
    (G2_ARCHIVE, "qualify/draw-09.json.gz", _cuda_cluster_on_an_a100, "energy.learners.cuda_shape"),
    (G2_ARCHIVE, "qualify/draw-02.json.gz", _cuda_cluster_of_sixteen, "energy.learners.cuda_shape"),
    (G2_ARCHIVE, "qualify/draw-06.json.gz", _previous_source, "energy.learners.kernel_source_sha256"),
    (G8_ARCHIVE, "qualify/draw-08.json.gz", _cuda_cluster_on_an_a100, "energy.learners.cuda_shape"),
    (G8_ARCHIVE, "qualify/draw-04.json.gz", _exchange_dropped, "energy.learners.cuda_shape"),
    (G8_ARCHIVE, TRIAL.format(2), _energy_copy_other_launch, "energy.learners.energy_metadata"),
    (G8_ARCHIVE, TRIAL.format(1), _cuda_cluster_split_published, "energy.learners.cuda_buffers"),
    (G8_ARCHIVE, "qualify/draw-03.json.gz", _validation, "metadata.selftest"),
    (G8_ARCHIVE, TRIAL.format(2), _timing_scope, "metadata.constants"),
    (G8_ARCHIVE, "qualify/draw-05.json.gz", _named_bytes, "qualify.record.fresh_process"),
    (G8_ARCHIVE, "profile/workspace-16-8-task-r01.fixture.json.gz", _inventory, "memory.inventory.structure.fused"),
    (G8_ARCHIVE, "profile/profiles.json.gz", _summary_learner, "profile.summary.learner"),
    (G8_ARCHIVE, "profile/workspace-16-8-training-r02.fixture.json.gz", _metadata_says_rev88, "fixture.learner"),
    (G8_ARCHIVE, "qualify/draw-07.json.gz", _metadata_says_rev88, "qualify.record.learner"),
    (G8_ARCHIVE, TRIAL.format(3), _one_program, "energy.learners.train_programs"),
    (G8_ARCHIVE, "qualify/draw-05.json.gz", _metadata_one_program, "energy.learners.metadata_block"),
    (G8_ARCHIVE, TRIAL.format(2), _more_programs_than_sms, "energy.learners.train_programs.form"),
    (G8_ARCHIVE, TRIAL.format(0), _other_slices, "energy.learners.product_slices"),
    (G8_ARCHIVE, "qualify/draw-02.json.gz", _extent_too_short, "energy.learners.product_slices.form"),
    (G8_ARCHIVE, TRIAL.format(3), _energy_metadata_slices, "energy.learners.product_slices"),
    (G8_ARCHIVE, TRIAL.format(2), _tensor_core_trial, "energy.learners.product_precision"),
    (G8_ARCHIVE, "qualify/draw-06.json.gz", _unknown_precision, "energy.learners.product_precision.form"),
    (G8_ARCHIVE, "qualify/draw-08.json.gz", _metadata_other_precision, "energy.learners.metadata_block"),
])
def test_forgery_fails(tmp_path: Path, archive: Path, rel: str, change, check: str) -> None:
    root = linked_copy(archive, tmp_path)
    forge_record(root, rel, change)
    assert "FAIL" in check_statuses(root).get(check, set()), check


def _profile_cluster_of_four(rec: dict) -> None:
    """A G = 8 profile's fixture record relabelled as G = 4 (32 rows per block): Nsight Compute's CSV still
    shows the 8-block launch."""
    rec["learner"]["train_programs"], rec["learner"]["rows_per_program"] = 4, 32


def _profile_exchange_pushed(rec: dict) -> None:
    """A G = 8 profile's fixture record of the pulled exchange relabelled as the pushed one: the pushed exchange
    allocates 177,728 B of dynamic shared memory, the CSV shows 147,072."""
    rec["learner"]["exchange"] = "push"


@pytest.mark.parametrize(("archive", "rel", "change"), [
    (G8_ARCHIVE, "profile/workspace-16-8-training-r01.fixture.json.gz", _profile_cluster_of_four),
    (G8_ARCHIVE, "profile/workspace-16-8-training-r02.fixture.json.gz", _profile_exchange_pushed),
    (G8_ARCHIVE, "profile/workspace-4096-8-training-r00.fixture.json.gz", _profile_cluster_of_four),
    (G2_ARCHIVE, "profile/workspace-4096-8-training-r00.fixture.json.gz", _cuda_threads_of_the_row_group_kernel),
])
def test_a_launch_shape_the_profile_csv_contradicts_fails(tmp_path: Path, archive: Path, rel: str, change) -> None:
    """A profile fixture record whose launch fields disagree with the launch cells of its own raw ncu CSV fails
    ``profile.cuda_launch`` (whatever else fails with it)."""
    root = linked_copy(archive, tmp_path)
    forge_record(root, rel, change)
    assert "FAIL" in check_statuses(root).get("profile.cuda_launch", set())


def _training_cells(archive: Path) -> dict[str, str]:
    from bundle.profile import parse_raw_csv  # noqa: PLC0415

    text = gzip.decompress((archive / "profile" / "workspace-16-8-training-r00.csv.gz").read_bytes()).decode()
    return parse_raw_csv(text).launch


def _layout(sha: str) -> dict:
    from verify.checks.run_energy import LEGACY_LAYOUTS  # noqa: PLC0415

    return LEGACY_LAYOUTS[sha]


G8_SOURCE = "9da9db69e68ac4f874179804bb4c492737a753d506dbd1a65cd0a8c9deda1f4a"
G2_SOURCE = "0ac8be88a18f761d3bbdd8e97b10805182246bf99ee473ad15d6eb1cec60f1bc"


@pytest.mark.parametrize(("edit", "layout_edit", "problems"), [
    ({}, {}, 0), ({"train_programs": 4, "rows_per_program": 32}, {}, 3), ({"train_threads": 320}, {}, 1),
    ({"cluster_update": False}, {}, 2), ({"split_update": False}, {}, 0),
    ({}, {"shared": {"partial_floats": 7556, "rows16": False}}, 1),   # 32-row arrays: 164,608 B, not 147,072
    ({}, {"shared": {"partial_floats": 7554, "rows16": True}}, 1),
    ({}, {"threads": {"unit": 32, "least": 1, "most": 32}}, 0)])   # no shared facts: grid, block and cluster only
def test_the_launch_cells_of_the_g8_archive_against_launch_fields(edit: dict, layout_edit: dict, problems: int) -> None:
    """``evidence/h200-fused-cuda-20261205``'s training CSV (8 blocks of 384 threads, a cluster of 8, 147,072 B
    of dynamic shared memory: 16-row arrays) fits its own learner block and layout and none of these edits but
    three: the split update allocates what the unsplit one does, and a layout without shared-memory facts (an
    unknown source's) compares only the grid, block and cluster."""
    from verify.checks.run_energy import GENERIC_LAYOUT, cuda_launch_problems  # noqa: PLC0415

    block = json.loads(gzip.decompress((G8_ARCHIVE / "qualify" / "draw-00.json.gz").read_bytes()))["fixture"]["learner"]
    layout = GENERIC_LAYOUT if "threads" in layout_edit else {**_layout(G8_SOURCE), **layout_edit}
    assert len(cuda_launch_problems({**block, **edit}, _training_cells(G8_ARCHIVE), layout)) == problems


def test_the_shared_bytes_of_the_declared_layout() -> None:
    """The verifier's own sum of a training block's shared memory, from the layout the current source declares,
    equals the CUDA tool's for the current source, and what the kept archives' CSVs show for theirs."""
    from bundle import fused_cuda  # noqa: PLC0415
    from verify.checks.run_energy import cuda_train_shared_bytes, parse_layout  # noqa: PLC0415

    current = parse_layout(fused_cuda.KERNEL_SOURCE.read_text())
    for rows in (8, 16, 17, 32, 43, 64, 128):
        for cluster in (False, True):
            assert cuda_train_shared_bytes(current, rows, cluster) == fused_cuda.train_shared_bytes(rows, cluster)
    for rows in (16, 19, 22, 26, 32):   # the pushed exchange, G = 8 down to 4
        assert cuda_train_shared_bytes(current, rows, True, True) == fused_cuda.train_shared_bytes(rows, True, True)
    assert cuda_train_shared_bytes(current, 16, True, True) == 4 * (16144 + 274 * 20 + 2 * 7568 + 8 * 952 + 24 + 32)
    assert cuda_train_shared_bytes(current, 32, True, True) == 195392 <= 227 * 1024
    assert cuda_train_shared_bytes(_layout(G2_SOURCE), 16, True, True) is None   # no pushed exchange there
    assert _training_cells(G2_ARCHIVE)["launch__shared_mem_per_block_dynamic"] == "200,064"   # 0ac8be88, G = 2
    assert _training_cells(G8_ARCHIVE)["launch__shared_mem_per_block_dynamic"] == "147,072"   # 9da9db69, G = 8
    assert cuda_train_shared_bytes(_layout(G8_SOURCE), 16, True) == 147072
    assert cuda_train_shared_bytes(_layout(G2_SOURCE), 64, True) == 200064
    assert cuda_train_shared_bytes({**current, "shared": {"partial_floats": 7556, "rows16": False}}, 16, True) == 164608


def test_the_current_source_declares_what_the_cuda_tool_launches() -> None:
    """bundle/fused_cuda.cu's layout block against bundle.fused_cuda: threads 32 x MIN_WARPS..MAX_WARPS, the
    cluster update that may be split, the pushed exchange, partial buffers PARTIAL_STRIDE floats apart."""
    from bundle import fused_cuda  # noqa: PLC0415
    from verify.checks.run_energy import parse_layout  # noqa: PLC0415

    layout = parse_layout(fused_cuda.KERNEL_SOURCE.read_text())
    assert layout["threads"] == {"unit": 32, "least": fused_cuda.MIN_WARPS, "most": fused_cuda.MAX_WARPS}
    assert layout["cluster"] and layout["cluster_split"] and layout["push"]
    assert layout["shared"]["partial_floats"] == fused_cuda.PARTIAL_STRIDE


def test_a_compare_record_relabelled_fused_fails(tmp_path: Path) -> None:
    """A rev88 record passed off as the variant (to dodge the frozen inventory) fails: compare never runs one."""
    root = linked_copy(REPO_ROOT / "evidence" / "h200-20261202", tmp_path)
    fused = json.loads(gzip.decompress((G8_ARCHIVE / "qualify" / "draw-00.json.gz").read_bytes()))["metadata"]["learner"]

    def relabel(rec: dict) -> None:
        rec["learner"] = dict(fused)
        rec["metadata"]["learner"] = dict(fused)
    forge_record(root, "compare/workspace-16-8.json.gz", relabel)
    assert "FAIL" in check_statuses(root).get("fixture.learner", set())


@pytest.mark.parametrize(("slices", "ok"), [
    ({"features": 16, "rows": 32, "feature_extent": 48}, True), ({"features": 32, "rows": 16}, True),
    ({"features": 64, "rows": 128, "feature_extent": 64}, True),   # the interpreter: whole sums
    ({"features": 16, "rows": 32, "feature_extent": 64}, False), ({"features": 8, "rows": 32}, False),
    ({"features": 16, "rows": 24}, False), ({"features": 16.0, "rows": 32}, False),
    ({"features": 16, "rows": 32, "extra": 1}, False), ("16/32", False)])
def test_product_slices_form(slices, ok) -> None:
    from verify.checks.run_energy import _slices_form  # noqa: PLC0415

    assert _slices_form(slices) is ok


def _block(**edit) -> dict:
    return {"kernel_tool": "cuda", "kernel_source_sha256": G8_SOURCE, "train_programs": 4, "rows_per_program": 32,
            "train_threads": 384, "split_update": True, "cluster_update": True, "product_precision": "ieee",
            "triton_version": None, "cupy": {"cupy": "14.2.0", "nvrtc": "13.0"}, "exchange": "pull", **edit}


NO_SPLIT = {"cluster_split": False, "push": False}
NO_CLUSTER = {"cluster": False, "cluster_split": False, "push": False}


@pytest.mark.parametrize(("edit", "layout_edit", "ok"), [
    ({}, {}, True), ({"split_update": False}, {}, True),
    ({}, NO_SPLIT, False),                                            # a source whose cluster update is never split
    ({"split_update": False}, NO_SPLIT, True),
    ({}, NO_CLUSTER, False), ({"cluster_update": False, "split_update": False}, NO_CLUSTER, True),
    ({"train_threads": 13 * 32}, {}, True), ({"train_threads": 13 * 32}, {"threads": {"unit": 32, "least": 5, "most": 12}}, False),
    ({"train_threads": 264}, {}, False),                              # not whole warps (the first kernel's row groups)
])
def test_the_cluster_update_and_threads_only_as_the_layout_declares(edit, layout_edit, ok) -> None:
    """A cluster record (G = 4, sm_90) may say split_update true only for a source whose layout has
    ``cluster_split``, cluster_update true only where it has ``cluster``, and threads as its layout's range."""
    from verify.checks.run_energy import _cuda_shape_problems  # noqa: PLC0415

    layout = {**_layout(G8_SOURCE), **layout_edit}
    assert (not _cuda_shape_problems(_block(**edit), {"compute_capability": "9.0"}, layout)) is ok


@pytest.mark.parametrize(("edit", "partials", "published", "ok"), [
    ({}, [1], [1], True), ({"split_update": False}, [1], [1], True),
    ({}, [1], [7554], False),                                              # the grid split's buffer in a cluster
    ({"cluster_update": False, "split_update": False}, [2, 4, 7554], [1], True),
    ({"cluster_update": False}, [2, 4, 7554], [7554], True),                # the grid's split update
    ({"cluster_update": False}, [2, 4, 7554], [1], False),                  # split claimed, one-float buffer
    ({"cluster_update": False, "split_update": False}, [2, 2, 7554], [1], False),   # partials of 2 blocks, 4 claimed
])
def test_the_cuda_buffers_follow_the_launch_fields(edit, partials, published, ok) -> None:
    """``partials`` (2, G, 7554) for the grid barrier or (1,) with the cluster; ``published`` (7554,) only for the
    grid's split update (``CudaFusedTask``)."""
    from verify.checks.run_energy import _cuda_inventory_problems  # noqa: PLC0415

    inventory = {"named_tensors": [{"name": "partials", "shape": partials, "dtype": "torch.float32"},
                                   {"name": "published", "shape": published, "dtype": "torch.float32"},
                                   {"name": "barrier_count", "shape": [1], "dtype": "torch.int32"}]}
    assert (not _cuda_inventory_problems(_block(**edit), inventory)) is ok


@pytest.mark.parametrize(("edit", "layout_edit", "ok"), [
    ({"exchange": None}, {}, False), ({}, {}, True), ({"exchange": "push"}, {}, True),
    ({"exchange": "push", "train_programs": 8, "rows_per_program": 16}, {}, True),
    ({"exchange": "Push"}, {}, False), ({"exchange": 3}, {}, False),
    ({"exchange": "push", "split_update": False}, {}, False), ({"exchange": "push", "cluster_update": False}, {}, False),
    ({"exchange": "push", "train_programs": 3, "rows_per_program": 43}, {}, False),
    ({"exchange": "push"}, {"push": False}, False)])
def test_the_pushed_exchange_only_where_it_can_run(edit, layout_edit, ok) -> None:
    """A CUDA record's ``exchange`` (required for a source whose layout has push) is pull or push, and push only
    for a source that has it, with the split cluster update and at most 32 rows per block
    (bundle.fused_cuda.push_possible)."""
    from verify.checks.run_energy import _cuda_shape_problems  # noqa: PLC0415

    block = _block(**edit)
    if block["exchange"] is None:
        block.pop("exchange")
    layout = {**_layout(G8_SOURCE), **layout_edit}
    assert (not _cuda_shape_problems(block, {"compute_capability": "9.0"}, layout)) is ok
