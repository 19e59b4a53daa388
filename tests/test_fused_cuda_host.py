"""Host-side rules of the CUDA kernel tool that need no GPU: which NVRTC compiles the cluster update."""

from __future__ import annotations

import pytest

from bundle import fused_cuda
from protocol.errors import BundleError


@pytest.mark.parametrize(("nvrtc", "ok"), [((12, 4), False), ((12, 5), False), ((12, 7), False), ((12, 8), True),
                                           ((12, 9), True), ((13, 0), True), ((11, 8), False)])
def test_the_cluster_update_needs_nvrtc_12_8(nvrtc, ok) -> None:
    assert fused_cuda.cluster_compiles(nvrtc) is ok


def test_the_restricted_fences_are_only_in_the_cluster_arrive() -> None:
    """The PTX ISA 8.6 instructions sit in cluster_arrive() alone, so that a build without the cluster (an
    A100, G = 1, more than 8 blocks) never emits them and any NVRTC compiles it."""
    text = fused_cuda.KERNEL_SOURCE.read_text()
    start = text.index("__device__ __forceinline__ void cluster_arrive()")
    body = text[start:text.index("}", start)]
    for fence in ("fence.acquire.sync_restrict::shared::cluster.cluster;",
                  "fence.release.sync_restrict::shared::cta.cluster;"):
        assert text.count(fence) == 1 and fence in body
    assert "barrier.cluster.arrive.relaxed;" in body


@pytest.mark.parametrize(("requested", "nvrtc", "want"), [(None, (13, 0), True), (True, (12, 8), True),
                                                          (False, (12, 9), True), (None, (12, 6), False),
                                                          (False, (12, 4), False)])
def test_the_default_rule_falls_back_to_the_grid_barrier_on_an_older_nvrtc(requested, nvrtc, want) -> None:
    assert fused_cuda.cluster_nvrtc_rule(requested, nvrtc) is want


def test_asking_for_the_cluster_with_an_older_nvrtc_is_one_line() -> None:
    with pytest.raises(BundleError) as info:
        fused_cuda.cluster_nvrtc_rule(True, (12, 6))
    message = str(info.value)
    assert "NVRTC 12.8" in message and "12.6" in message and "cluster=None" in message and "\n" not in message
