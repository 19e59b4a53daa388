"""The rev88-fused run archives (evidence/h200-fused-20261201 with the single-CTA kernel,
evidence/h200-fused-20261201-g8 with REV88_FUSED_CTAS=8, evidence/h200-fused-20261202 with the
single-CTA kernel summing 48 feature columns in slices of 16; one H200 each;
evidence/h200-fused-cuda-20261203 with the CUDA kernel tool at G = 2, K = 4, its profile on a second
H200; evidence/h200-fused-cuda-20261203b with the tool's feature-major kernel, G = 2, K = 4, one
H200; evidence/h200-fused-cuda-20261203c with the cluster update, G = 2, K = 4, no profile phase, and
evidence/h200-fused-cuda-20261203d, the same at 12 warps on another H200;
evidence/h200-fused-cuda-20261203e, the source with weight rows of 44 floats, G = 2, 12 warps, its
profile resumed on a second H200; evidence/h200-fused-cuda-20261204, the source with 16-byte partial reads
and the split cluster update, G = 2 unsplit, 12 warps, one H200; evidence/h200-fused-cuda-20261204c, the
source with 16-row arrays, G = 8 split inside the cluster, 12 warps, one H200;
evidence/h200-fused-cuda-20261204d, the same source at G = 2 unsplit inside the cluster, 12 warps, one H200;
evidence/h200-fused-cuda-20261204e, the source whose cluster arrive is relaxed after two restricted fences, G = 2
unsplit inside the cluster, 12 warps, one H200; evidence/h200-fused-cuda-20261205, the current source (with
the pushed exchange as an option, not used) at G = 8 split inside the cluster, 12 warps, one H200):
verified with 0 FAIL, forgeries caught.

The archive holds the variant's qualification (11 draws), the learners energy design (rev88 :16:8,
rev88 :0:0, rev88-fused; K = 5) and its profile phase (``--learner rev88-fused``). The variant has no
frozen inventory or self-test; each forgery below rewrites one record consistently (the manifest is
rebuilt) and must FAIL the named check.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO_ROOT, check_statuses, forge_record, linked_copy

ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-20261201"
GRID_ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-20261201-g8"
SLICED_ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-20261202"   # ctas=1, products in slices of 16 over features
CUDA_ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-cuda-20261203"  # REV88_FUSED_KERNEL=cuda, G = 2
CUDA2_ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-cuda-20261203b"  # the same, the feature-major kernel
CUDA3_ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-cuda-20261203c"  # the cluster update, G = 2, 16 warps
CUDA4_ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-cuda-20261203d"  # the same source tidied, 12 warps
CUDA5_ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-cuda-20261203e"  # weight rows of 44 floats, 12 warps
CUDA6_ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-cuda-20261204"  # 16-byte partial reads, cluster split source
CUDA7_ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-cuda-20261204c"  # 16-row arrays, G = 8 split cluster
CUDA8_ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-cuda-20261204d"  # the same source, G = 2 unsplit cluster
CUDA9_ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-cuda-20261204e"  # relaxed cluster arrive, G = 2 unsplit cluster
CUDA10_ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-cuda-20261205"  # the current source, G = 8 split cluster
CUDA_ARCHIVES = (CUDA_ARCHIVE, CUDA2_ARCHIVE, CUDA3_ARCHIVE, CUDA4_ARCHIVE, CUDA5_ARCHIVE, CUDA6_ARCHIVE,
                 CUDA7_ARCHIVE, CUDA8_ARCHIVE, CUDA9_ARCHIVE, CUDA10_ARCHIVE)
FROZEN_DRAW0 = REPO_ROOT / "evidence" / "rev88-original" / "results" / "draw-00.json"


@pytest.mark.parametrize(("archive", "programs", "rounds"), [(ARCHIVE, None, 5), (GRID_ARCHIVE, 8, 5),
                                                            (SLICED_ARCHIVE, 1, 5), (CUDA_ARCHIVE, 2, 4),
                                                            (CUDA2_ARCHIVE, 2, 4), (CUDA3_ARCHIVE, 2, 4),
                                                            (CUDA4_ARCHIVE, 2, 4), (CUDA5_ARCHIVE, 2, 4),
                                                            (CUDA6_ARCHIVE, 2, 4), (CUDA7_ARCHIVE, 8, 4),
                                                            (CUDA8_ARCHIVE, 2, 4), (CUDA9_ARCHIVE, 2, 4),
                                                            (CUDA10_ARCHIVE, 8, 4)],
                         ids=["single-cta", "grid-8", "single-cta-sliced", "cuda-2", "cuda-feature-major-2",
                              "cuda-cluster-2", "cuda-cluster-12-warps-2", "cuda-cluster-rows-44-2",
                              "cuda-cluster-quads-2", "cuda-cluster-16-rows-8", "cuda-cluster-16-rows-source-2",
                              "cuda-cluster-relaxed-arrive-2", "cuda-cluster-current-source-8"])
def test_shipped_fused_archive_verifies_and_its_predictions_are_the_frozen_ones(archive: Path, programs,
                                                                                rounds: int) -> None:
    statuses = check_statuses(archive)
    assert not [c for c, s in statuses.items() if "FAIL" in s]
    for check in ("metadata.selftest", "memory.inventory.structure.fused",
                  *(("profile.summary.learner",) if (archive / "profile").is_dir() else ()),
                  "qualify.record.fresh_process", "placement.gpu_lock", "energy.learners.train_programs",
                  "energy.learners.metadata_block", "energy.learners.inventory_shape",
                  "energy.learners.product_slices", "energy.learners.product_slices.form",
                  "energy.learners.product_precision", "energy.learners.product_precision.form",
                  "energy.learners.kernel_tool", "energy.learners.kernel_tool.form", "energy.learners.cuda_shape",
                  *(("energy.learners.cuda_buffers",) if archive in CUDA_ARCHIVES else ())):
        assert statuses.get(check) == {"PASS"}, (check, statuses.get(check))
    frozen = json.loads(FROZEN_DRAW0.read_text())["metadata"]["predictions_sha256"]
    with gzip.open(archive / "energy" / "learners.json.gz") as fh:
        design = json.load(fh)
    fused_trials = [t for t in design["trials"] if t["learner"] == "rev88-fused"]
    assert len(fused_trials) == rounds
    for trial in fused_trials:
        rel = archive / "energy" / trial["record"]
        rec = json.loads(gzip.decompress(rel.read_bytes()))
        assert rec["learner"]["name"] == "rev88-fused" and rec["metadata"]["predictions_sha256"] == frozen
        assert rec["learner"].get("train_programs") == programs
        assert rec["learner"].get("kernel_tool") == ("cuda" if archive in CUDA_ARCHIVES else None)
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


def _strip_launch_shape(rec: dict) -> None:
    for block in (rec["learner"], rec["metadata"]["learner"]):
        block.pop("train_programs")
        block.pop("train_num_warps")  # now it reads as a single-CTA record of older code, barrier buffers and all


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
    rec["metadata"]["learner"]["product_slices"]["feature_extent"] = 32  # would drop live features 32…40


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


def _cuda_more_blocks(rec: dict) -> None:
    """train_programs 4 (rows 32) in block and metadata, but the partials buffer still holds 2 blocks."""
    for block in (rec["learner"], rec["metadata"]["learner"]):
        block["train_programs"], block["rows_per_program"] = 4, 32


def _cuda_split_claimed(rec: dict) -> None:
    """split_update true, but the published buffer is the unsplit kernel's single float."""
    for block in (rec["learner"], rec["metadata"]["learner"]):
        block["split_update"] = True


def _cuda_cluster_denied(rec: dict) -> None:
    """cluster_update false on a record of the cluster update: the inventory's one-float partials say otherwise."""
    for block in (rec["learner"], rec["metadata"]["learner"]):
        block["cluster_update"] = False


def _cuda_cluster_split_claimed(rec: dict) -> None:
    """split_update true beside cluster_update true (with the cluster's one-float published buffer) in a record of
    93597b73…, whose cluster update is never split."""
    for block in (rec["learner"], rec["metadata"]["learner"]):
        block["split_update"] = True


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


def _cuda_cluster_claimed_by_the_old_kernel(rec: dict) -> None:
    """cluster_update true (and the cluster's one-float partials) in a record of 4764c796…, which has no cluster."""
    for block in (rec["learner"], rec["metadata"]["learner"]):
        block["cluster_update"] = True
    for t in rec["buffer_inventory"]["named_tensors"]:
        if t.get("name") == "partials":
            t["shape"] = [1]


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


def _cuda_threads_of_the_warp_kernel(rec: dict) -> None:
    """384 threads (12 warps, the feature-major kernel's shape) on a record of the row-group kernel."""
    for block in (rec["fixture"]["learner"], rec["metadata"]["learner"]):
        block["train_threads"] = 384


def _energy_copies_other_source(rec: dict) -> None:
    """The learner copies taken around the trial's invocations name another listed source and 512 threads."""
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
    (CUDA_ARCHIVE, "energy/trial-r01-rev88-fused-workspace-16-8.json.gz", _triton_trial_in_cuda_archive,
     "energy.learners.kernel_tool"),
    (CUDA_ARCHIVE, "energy/trial-r02-rev88-fused-workspace-16-8.json.gz", _unknown_tool,
     "energy.learners.kernel_tool.form"),
    (CUDA_ARCHIVE, "qualify/draw-03.json.gz", _cuda_rows_off, "energy.learners.cuda_shape"),
    (CUDA_ARCHIVE, "qualify/draw-04.json.gz", _cuda_names_triton, "energy.learners.cuda_shape"),
    (CUDA_ARCHIVE, "energy/trial-r03-rev88-fused-workspace-16-8.json.gz", _cuda_inventory_as_triton,
     "energy.learners.inventory_shape"),
    (CUDA_ARCHIVE, "energy/trial-r00-rev88-fused-workspace-16-8.json.gz", _cuda_more_blocks,
     "energy.learners.cuda_buffers"),
    (CUDA_ARCHIVE, "energy/trial-r02-rev88-fused-workspace-16-8.json.gz", _cuda_split_claimed,
     "energy.learners.cuda_buffers"),
    (CUDA_ARCHIVE, "qualify/draw-05.json.gz", _cuda_no_cupy, "energy.learners.cuda_shape"),
    (CUDA_ARCHIVE, "qualify/draw-06.json.gz", _cuda_threads_of_the_warp_kernel, "energy.learners.cuda_shape"),
    (CUDA2_ARCHIVE, "energy/trial-r01-rev88-fused-workspace-16-8.json.gz", _cuda_threads_of_the_row_group_kernel,
     "energy.learners.cuda_shape"),
    (CUDA2_ARCHIVE, "energy/trial-r00-rev88-fused-workspace-16-8.json.gz", _cuda_split_claimed,
     "energy.learners.cuda_buffers"),
    (CUDA2_ARCHIVE, "energy/trial-r02-rev88-fused-workspace-16-8.json.gz", _cuda_cluster_claimed_by_the_old_kernel,
     "energy.learners.cuda_shape"),
    (CUDA4_ARCHIVE, "qualify/draw-03.json.gz", _cuda_cluster_field_dropped, "energy.learners.cuda_shape"),
    (CUDA5_ARCHIVE, "qualify/draw-01.json.gz", _cuda_cluster_field_dropped, "energy.learners.cuda_shape"),
    (CUDA5_ARCHIVE, "energy/trial-r01-rev88-fused-workspace-16-8.json.gz", _cuda_threads_of_the_row_group_kernel,
     "energy.learners.cuda_shape"),
    (CUDA5_ARCHIVE, "energy/trial-r03-rev88-fused-workspace-16-8.json.gz", _cuda_cluster_denied,
     "energy.learners.cuda_buffers"),
    (CUDA5_ARCHIVE, "energy/trial-r01-rev88-fused-workspace-16-8.json.gz", _energy_copies_other_source,
     "energy.learners.energy_metadata"),
    (CUDA5_ARCHIVE, "energy/trial-r02-rev88-fused-workspace-16-8.json.gz", _energy_copy_other_launch,
     "energy.learners.energy_metadata"),
    (CUDA5_ARCHIVE, "energy/trial-r00-rev88-fused-workspace-16-8.json.gz", _cuda_cluster_split_claimed,
     "energy.learners.cuda_shape"),
    (CUDA6_ARCHIVE, "energy/trial-r02-rev88-fused-workspace-16-8.json.gz", _cuda_cluster_split_published,
     "energy.learners.cuda_buffers"),
    (CUDA6_ARCHIVE, "qualify/draw-04.json.gz", _cuda_cluster_on_an_a100, "energy.learners.cuda_shape"),
    (CUDA6_ARCHIVE, "energy/trial-r01-rev88-fused-workspace-16-8.json.gz", _energy_copies_other_source,
     "energy.learners.energy_metadata"),
    (CUDA7_ARCHIVE, "qualify/draw-07.json.gz", _cuda_cluster_on_an_a100, "energy.learners.cuda_shape"),
    (CUDA7_ARCHIVE, "qualify/draw-02.json.gz", _cuda_cluster_of_sixteen, "energy.learners.cuda_shape"),
    (CUDA7_ARCHIVE, "energy/trial-r01-rev88-fused-workspace-16-8.json.gz", _cuda_cluster_split_published,
     "energy.learners.cuda_buffers"),
    (CUDA7_ARCHIVE, "energy/trial-r03-rev88-fused-workspace-16-8.json.gz", _energy_copy_other_launch,
     "energy.learners.energy_metadata"),
    (CUDA8_ARCHIVE, "qualify/draw-05.json.gz", _cuda_cluster_of_sixteen, "energy.learners.cuda_shape"),
    (CUDA8_ARCHIVE, "energy/trial-r02-rev88-fused-workspace-16-8.json.gz", _energy_copy_other_launch,
     "energy.learners.energy_metadata"),
    (CUDA8_ARCHIVE, "qualify/draw-09.json.gz", _cuda_cluster_on_an_a100, "energy.learners.cuda_shape"),
    (CUDA9_ARCHIVE, "qualify/draw-03.json.gz", _cuda_cluster_of_sixteen, "energy.learners.cuda_shape"),
    (CUDA9_ARCHIVE, "energy/trial-r01-rev88-fused-workspace-16-8.json.gz", _energy_copies_other_source,
     "energy.learners.energy_metadata"),
    (CUDA9_ARCHIVE, "qualify/draw-06.json.gz", _previous_source, "energy.learners.kernel_source_sha256"),
    (CUDA10_ARCHIVE, "qualify/draw-08.json.gz", _cuda_cluster_on_an_a100, "energy.learners.cuda_shape"),
    (CUDA10_ARCHIVE, "qualify/draw-04.json.gz", _exchange_dropped, "energy.learners.cuda_shape"),
    (CUDA10_ARCHIVE, "energy/trial-r02-rev88-fused-workspace-16-8.json.gz", _energy_copy_other_launch,
     "energy.learners.energy_metadata"),
    (CUDA3_ARCHIVE, "energy/trial-r01-rev88-fused-workspace-16-8.json.gz", _cuda_cluster_denied,
     "energy.learners.cuda_buffers"),
    (CUDA3_ARCHIVE, "qualify/draw-02.json.gz", _cuda_cluster_of_sixteen, "energy.learners.cuda_shape"),
    (CUDA3_ARCHIVE, "qualify/draw-09.json.gz", _cuda_cluster_on_an_a100, "energy.learners.cuda_shape"),
    (CUDA3_ARCHIVE, "energy/trial-r02-rev88-fused-workspace-16-8.json.gz", _cuda_cluster_not_a_bool,
     "energy.learners.cuda_shape"),
    (ARCHIVE, "qualify/draw-03.json.gz", _validation, "metadata.selftest"),
    (ARCHIVE, "energy/trial-r02-rev88-fused-workspace-16-8.json.gz", _timing_scope, "metadata.constants"),
    (ARCHIVE, "qualify/draw-05.json.gz", _named_bytes, "qualify.record.fresh_process"),
    (ARCHIVE, "profile/workspace-16-8-task-r01.fixture.json.gz", _inventory, "memory.inventory.structure.fused"),
    (ARCHIVE, "profile/profiles.json.gz", _summary_learner, "profile.summary.learner"),
    (ARCHIVE, "profile/workspace-16-8-training-r02.fixture.json.gz", _metadata_says_rev88, "fixture.learner"),
    (ARCHIVE, "qualify/draw-07.json.gz", _metadata_says_rev88, "qualify.record.learner"),
    (GRID_ARCHIVE, "energy/trial-r03-rev88-fused-workspace-16-8.json.gz", _one_program, "energy.learners.train_programs"),
    (GRID_ARCHIVE, "qualify/draw-05.json.gz", _metadata_one_program, "energy.learners.metadata_block"),
    (GRID_ARCHIVE, "energy/trial-r01-rev88-fused-workspace-16-8.json.gz", _strip_launch_shape,
     "energy.learners.inventory_shape"),
    (GRID_ARCHIVE, "energy/trial-r02-rev88-fused-workspace-16-8.json.gz", _more_programs_than_sms,
     "energy.learners.train_programs.form"),
    (SLICED_ARCHIVE, "energy/trial-r04-rev88-fused-workspace-16-8.json.gz", _other_slices,
     "energy.learners.product_slices"),
    (SLICED_ARCHIVE, "qualify/draw-02.json.gz", _extent_too_short, "energy.learners.product_slices.form"),
    (SLICED_ARCHIVE, "energy/trial-r03-rev88-fused-workspace-16-8.json.gz", _energy_metadata_slices,
     "energy.learners.product_slices"),
    (SLICED_ARCHIVE, "energy/trial-r02-rev88-fused-workspace-16-8.json.gz", _tensor_core_trial,
     "energy.learners.product_precision"),
    (SLICED_ARCHIVE, "qualify/draw-06.json.gz", _unknown_precision, "energy.learners.product_precision.form"),
    (SLICED_ARCHIVE, "qualify/draw-08.json.gz", _metadata_other_precision, "energy.learners.metadata_block"),
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
    (CUDA7_ARCHIVE, "profile/workspace-16-8-training-r01.fixture.json.gz", _profile_cluster_of_four),
    (CUDA10_ARCHIVE, "profile/workspace-16-8-training-r02.fixture.json.gz", _profile_exchange_pushed),
    (CUDA10_ARCHIVE, "profile/workspace-4096-8-training-r00.fixture.json.gz", _profile_cluster_of_four),
    (CUDA6_ARCHIVE, "profile/workspace-4096-8-training-r00.fixture.json.gz", _cuda_threads_of_the_row_group_kernel),
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


@pytest.mark.parametrize(("edit", "problems"), [
    ({}, 0), ({"train_programs": 4, "rows_per_program": 32}, 3), ({"train_threads": 320}, 1),
    ({"cluster_update": False}, 2), ({"split_update": False}, 0),
    ({"kernel_source_sha256": "352ca9b5ddde92e112e9cf8293284133244e133fb483c18e4ba2227b358a9460"}, 1),
    ({"kernel_source_sha256": "0" * 64}, 0)])
def test_the_launch_cells_of_the_g8_archive_against_launch_fields(edit: dict, problems: int) -> None:
    """``evidence/h200-fused-cuda-20261204c``'s training CSV (8 blocks of 384 threads, a cluster of 8, 147,072 B
    of dynamic shared memory: 16-row arrays) fits its own learner block and none of these edits but two: the
    split update allocates what the unsplit one does, and an unlisted source has no known layout (only its
    grid, block and cluster are compared)."""
    from verify.checks.run_energy import cuda_launch_problems  # noqa: PLC0415

    block = json.loads(gzip.decompress((CUDA7_ARCHIVE / "qualify" / "draw-00.json.gz").read_bytes()))["fixture"]["learner"]
    assert len(cuda_launch_problems({**block, **edit}, _training_cells(CUDA7_ARCHIVE))) == problems


def test_the_shared_bytes_of_the_listed_layouts() -> None:
    """The verifier's own sum of a training block's shared memory equals the CUDA tool's for the current source,
    and what the archives' CSVs show for the sources before it."""
    from bundle import fused_cuda  # noqa: PLC0415
    from verify.checks.run_energy import cuda_train_shared_bytes  # noqa: PLC0415

    current = fused_cuda.kernel_source_sha256()
    for rows in (8, 16, 17, 32, 43, 64, 128):
        for cluster in (False, True):
            assert cuda_train_shared_bytes(current, rows, cluster) == fused_cuda.train_shared_bytes(rows, cluster)
    for rows in (16, 19, 22, 26, 32):   # the pushed exchange, G = 8 down to 4
        assert cuda_train_shared_bytes(current, rows, True, True) == fused_cuda.train_shared_bytes(rows, True, True)
    assert cuda_train_shared_bytes(current, 16, True, True) == 4 * (16144 + 274 * 20 + 2 * 7568 + 8 * 952 + 24 + 32)
    assert cuda_train_shared_bytes(current, 32, True, True) == 195392 <= 227 * 1024
    assert cuda_train_shared_bytes("8feb27d9e94c4a7cd5dc3e0f06a37b2fa85f49c2485037bdc3bc2fac832861b6", 16, True, True) is None
    assert _training_cells(CUDA6_ARCHIVE)["launch__shared_mem_per_block_dynamic"] == "200,064"
    assert _training_cells(CUDA8_ARCHIVE)["launch__shared_mem_per_block_dynamic"] == "200,064"   # ac5da96b, G = 2
    assert _training_cells(CUDA9_ARCHIVE)["launch__shared_mem_per_block_dynamic"] == "200,064"   # 0ac8be88, G = 2
    assert _training_cells(CUDA10_ARCHIVE)["launch__shared_mem_per_block_dynamic"] == "147,072"  # current, G = 8
    assert cuda_train_shared_bytes(current, 16, True) == 147072
    assert cuda_train_shared_bytes(current, 64, True) == 200064
    assert cuda_train_shared_bytes("352ca9b5ddde92e112e9cf8293284133244e133fb483c18e4ba2227b358a9460", 64, True) == 200064
    assert _training_cells(CUDA5_ARCHIVE)["launch__shared_mem_per_block_dynamic"] == "200,048"
    assert cuda_train_shared_bytes("93597b73bc485a83a052133362408dfb23082f3d4167085794131ccf1bd01436", 64, True) == 200048


def test_a_compare_record_relabelled_fused_fails(tmp_path: Path) -> None:
    """A rev88 record passed off as the variant (to dodge the frozen inventory) fails: compare never runs one."""
    from tests.conftest import REPO_ROOT as root_dir

    root = linked_copy(root_dir / "evidence" / "h200-20261202", tmp_path)
    fused = json.loads(gzip.decompress((ARCHIVE / "qualify" / "draw-00.json.gz").read_bytes()))["metadata"]["learner"]

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


@pytest.mark.parametrize(("sha", "split", "published", "want_shape", "want_buffers"), [
    ("352ca9b5ddde92e112e9cf8293284133244e133fb483c18e4ba2227b358a9460", True, [1], True, True),
    ("352ca9b5ddde92e112e9cf8293284133244e133fb483c18e4ba2227b358a9460", False, [1], True, True),
    ("352ca9b5ddde92e112e9cf8293284133244e133fb483c18e4ba2227b358a9460", True, [7554], True, False),
    ("ac5da96b62fbfa7e05987c1c652aed55fc985a2d8061bbc54d7b9a247eb2ba46", True, [1], True, True),
    ("ac5da96b62fbfa7e05987c1c652aed55fc985a2d8061bbc54d7b9a247eb2ba46", True, [7554], True, False),
    ("93597b73bc485a83a052133362408dfb23082f3d4167085794131ccf1bd01436", True, [1], False, True),
])
def test_the_split_cluster_update_only_for_a_source_that_has_it(sha, split, published, want_shape,
                                                                 want_buffers) -> None:
    """A cluster record (G = 4, sm_90) may say split_update true only for a source marked ``cluster_split``, and
    its ``published`` buffer is then the one float the cluster allocates."""
    from verify.checks.run_energy import _cuda_inventory_problems, _cuda_shape_problems

    block = {"kernel_tool": "cuda", "kernel_source_sha256": sha, "train_programs": 4, "rows_per_program": 32,
             "train_threads": 384, "split_update": split, "cluster_update": True, "product_precision": "ieee",
             "triton_version": None, "cupy": {"cupy": "14.2.0", "nvrtc": "13.0"}}
    assert (not _cuda_shape_problems(block, {"compute_capability": "9.0"})) is want_shape
    inventory = {"named_tensors": [{"name": "partials", "shape": [1], "dtype": "torch.float32"},
                                   {"name": "published", "shape": published, "dtype": "torch.float32"},
                                   {"name": "barrier_count", "shape": [1], "dtype": "torch.int32"}]}
    assert (not _cuda_inventory_problems(block, inventory)) is want_buffers


PUSH_SOURCE = "9da9db69e68ac4f874179804bb4c492737a753d506dbd1a65cd0a8c9deda1f4a"


@pytest.mark.parametrize(("edit", "ok"), [
    ({}, False), ({"exchange": "pull"}, True), ({"exchange": "push"}, True),
    ({"exchange": "push", "train_programs": 8, "rows_per_program": 16}, True),
    ({"exchange": "Push"}, False), ({"exchange": None}, False),
    ({"exchange": "push", "split_update": False}, False), ({"exchange": "push", "cluster_update": False}, False),
    ({"exchange": "push", "train_programs": 3, "rows_per_program": 43}, False),
    ({"exchange": "push", "kernel_source_sha256": "8feb27d9e94c4a7cd5dc3e0f06a37b2fa85f49c2485037bdc3bc2fac832861b6"},
     False)])
def test_the_pushed_exchange_only_where_it_can_run(edit, ok) -> None:
    """A CUDA record's ``exchange`` (absent before it was recorded; required for a source that has push) is pull or
    push, and push only for a source
    that has it, with the split cluster update and at most 32 rows per block (bundle.fused_cuda.push_possible)."""
    from verify.checks.run_energy import _cuda_shape_problems  # noqa: PLC0415

    block = {"kernel_tool": "cuda", "kernel_source_sha256": PUSH_SOURCE, "train_programs": 4, "rows_per_program": 32,
             "train_threads": 384, "split_update": True, "cluster_update": True, "product_precision": "ieee",
             "triton_version": None, "cupy": {"cupy": "14.2.0", "nvrtc": "13.0"}, **edit}
    assert (not _cuda_shape_problems(block, {"compute_capability": "9.0"})) is ok
