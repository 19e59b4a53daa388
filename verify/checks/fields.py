"""Field-level checks shared by both archive layouts: the learner metadata blocks, the named-storage
inventory's structure, and facts that several records of one archive must repeat.

A *metadata block* is the learner's ``metadata`` object (spec 3) wherever a record carries
one: a fixture record's ``metadata`` and its energy ``before_metadata``/``after_metadata``, a
draw record, a selection candidate, an API smoke. Every key of a block is checked here:

* the configuration against the one the enclosing record states (its ``config``), the
  parameter count by its formula, the train/query counts against the record's inputs;
* the protocol constants (flags, the descriptive method strings, the CPU self-test's cases
  and storage counts) against the frozen reference's draw-0 metadata;
* ``run_count`` from the record's own protocol (1 for a measurement; before the energy
  protocol 2 and after it 2 + 1 + trials × repeats; 1 + warm-up + tasks in the range of a
  profile);
* the state hashes against every other block of the same computation: the initial
  parameters of a (seed, depth) pair are one set everywhere; the final parameters, velocity,
  state vector, scores and predictions of one set of inputs, configuration, cuBLAS workspace,
  board and software are one set everywhere (a single record's are attested: the GPU
  training bits cannot be recomputed off the GPU);
* the image hashes of one set of inputs are one pair everywhere (ours are also recomputed).

The CPU self-test residuals and ``preparation_seconds`` are attested (host-dependent
floating point, a wall-clock time).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from protocol.learners import FUSED_LEARNER, FUSED_TIMING_SCOPE
from verify.records import get, get_dict, get_int, get_list
from verify.result import CheckResult, check_equal, check_true

CONSTANT_KEYS = ("fresh_initialization_per_run", "checkpoint_loaded", "normalization", "initialization", "optimizer",
                 "shuffle", "augmentation", "reversible_core", "retained_core_states", "core_saved_bytes_per_example",
                 "head_reversible", "input_lift_injective", "timing_scope")
"""Metadata keys whose values the protocol fixes (equal to the frozen reference's)."""
FINAL_KEYS = ("final_parameter_sha256", "final_velocity_sha256", "state_vector_sha256", "scores_sha256",
              "predictions_sha256")
SELFTEST_FLOAT_KEYS = ("maximum_gradient_abs_error", "inverse_max_abs_error")
SELFTEST_BOUND = 1e-5
"""Largest plausible CPU self-test residual (float32 cases reach 2.4e-7)."""


def learner_name(record: Mapping[str, Any]) -> str:
    """The learner a record or metadata block names: ``protocol.energy_design.learner_of``."""
    from protocol.energy_design import learner_of  # noqa: PLC0415

    return learner_of(record)


def fused_timing_scope() -> str:
    """The fused learner's ``timing_scope``: :data:`protocol.learners.FUSED_TIMING_SCOPE`, which
    ``bundle.fused_learner.TIMING_SCOPE`` is assigned from (that module imports torch)."""
    return FUSED_TIMING_SCOPE


def parameter_count(depth: int) -> int:
    """2d·41·41 + 82·10 + 10 (spec 2.2)."""
    return 2 * depth * 41 * 41 + 82 * 10 + 10


@dataclass
class Block:
    """One metadata block and what its enclosing record says about it.

    Attributes:
        rel: the record's archive path.
        path: key path of the block inside the record (``result.energy.after_metadata``).
        md: the block.
        config: the configuration the record states for the run.
        counts: (train examples, query examples) of the run's inputs.
        run_count: the run count the record's protocol implies, or None when it implies none.
        group: the computation the block belongs to (inputs, config, workspace, board, software):
            blocks of one group must carry the same final state.
        input_hashes: the record's own statement of its input hashes, or None.
    """

    rel: str
    path: str
    md: dict
    config: Mapping[str, Any]
    counts: tuple[int, int]
    run_count: int | None
    group: tuple
    input_hashes: Mapping[str, Any] | None = None
    extra: dict = field(default_factory=dict)

    @property
    def subject(self) -> str:
        """``rel path`` for verdicts."""
        return f"{self.rel} {self.path}"

    @property
    def where(self) -> str:
        """``rel: path`` for error lines."""
        return f"{self.rel}: {self.path}"


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def check_block(block: Block, reference: Mapping[str, Any]) -> list[CheckResult]:
    """The fields of one metadata block that need no other block: config, counts, constants, run count.

    Args:
        block: the block and its context.
        reference: the frozen reference's draw-0 ``metadata`` (spec 3).
    """
    md, s, w = block.md, block.subject, block.where
    out = [check_equal("metadata.config", s, get_dict(md, "config", w), dict(block.config),
                       what="metadata config vs the record's configuration"),
           check_equal("metadata.parameter_count", s, get_int(md, "parameter_count", w),
                       parameter_count(get_int(md, "config.depth", w)), what="2d·41·41 + 82·10 + 10"),
           check_equal("metadata.counts", s, [get_int(md, "train_count", w), get_int(md, "test_count", w)],
                       list(block.counts), what="train/query examples of the run's inputs")]
    fused = learner_name(md) == FUSED_LEARNER
    want_constants = {k: reference.get(k) for k in CONSTANT_KEYS} | (
        {"timing_scope": fused_timing_scope()} if fused else {})
    out.append(check_equal("metadata.constants", s, {k: get(md, k, None, w) for k in CONSTANT_KEYS}, want_constants,
                           what="protocol constants vs the frozen reference (the fused learner: its own timing "
                                "scope, protocol.learners.FUSED_TIMING_SCOPE)"))
    if fused:
        out.append(check_equal("metadata.selftest", s, md.get("validation"), None,
                               what="no CPU self-test block: the fused learner runs none (its reversible backward is "
                                    "checked through its predictions and hashes instead)"))
    else:
        out += check_selftest(get_dict(md, "validation", w), get_dict(reference, "validation", "frozen reference"),
                              subject=s, where=w)
    if block.run_count is not None:
        out.append(check_equal("metadata.run_count", s, get_int(md, "run_count", w), block.run_count,
                               what="run_count implied by the record's protocol"))
    from verify.checks import draws  # noqa: PLC0415

    perms = get_list(md, "epoch_permutation_sha256", w)
    out.append(draws.check_epoch_permutations(perms, n=get_int(md, "train_count", w), seed=get_int(md, "config.seed", w),
                                              subject=s))
    out.append(check_equal("metadata.epoch_count", s, len(perms), get_int(md, "config.epochs", w),
                           what="one epoch permutation per epoch of the configuration"))
    if block.input_hashes is not None:
        out.append(check_equal("metadata.input_hashes", s, get_dict(md, "input_hashes", w), dict(block.input_hashes),
                               what="metadata input_hashes vs the record's input hashes"))
    get(md, "preparation_seconds", float, w)
    return out


def check_selftest(selftest: Mapping[str, Any], reference: Mapping[str, Any], *, subject: str,
                   where: str) -> list[CheckResult]:
    """The CPU reconstruction self-test (spec 2.10) against the frozen reference's: cases, flags, storages.

    The two residuals per case are host floating point: bounded by :data:`SELFTEST_BOUND`, otherwise attested.
    """
    cases = get_list(selftest, "checks", where)
    ref_cases = get_list(reference, "checks", "frozen reference")

    def shape(c: Mapping[str, Any]) -> dict:
        return {k: v for k, v in c.items() if k not in SELFTEST_FLOAT_KEYS}

    residuals = [get(c, k, float, where) for c in cases for k in SELFTEST_FLOAT_KEYS]
    return [
        check_equal("metadata.selftest", subject,
                    {"passed": get(selftest, "passed", bool, where), "device": get(selftest, "device", str, where),
                     "scope": get(selftest, "scope", str, where), "cases": [shape(c) for c in cases]},
                    {"passed": True, "device": reference.get("device"), "scope": reference.get("scope"),
                     "cases": [shape(c) for c in ref_cases]},
                    what="CPU self-test cases (dtype, depth, flags, saved storages) vs the frozen reference"),
        check_true("metadata.selftest.residuals", subject, all(0 <= r <= SELFTEST_BOUND for r in residuals),
                   f"a CPU self-test residual is outside [0, {SELFTEST_BOUND:g}]: {residuals}", recorded=residuals),
    ]


def check_block_groups(blocks: list[Block], reference: Mapping[str, Any] | None) -> list[CheckResult]:
    """State hashes that several blocks must share.

    * initial parameters: one set per (seed, depth) — and, for the frozen (11, 2), the reference's;
    * final parameters, velocity, state vector, scores, predictions: one set per ``group``;
    * image hashes: one pair per set of inputs (train-label hash and query count).
    """
    out: list[CheckResult] = []
    initial: dict[tuple, list[tuple[str, str]]] = {}
    finals: dict[tuple, list[tuple[str, str]]] = {}
    images: dict[tuple, list[tuple[str, str]]] = {}
    for b in blocks:
        md, w = b.md, b.where
        seed_depth = (get_int(md, "config.seed", w), get_int(md, "config.depth", w))
        initial.setdefault(seed_depth, []).append((b.subject, _canon(get_dict(md, "initial_parameter_sha256", w))))
        finals.setdefault(b.group, []).append((b.subject, _canon({k: get(md, k, None, w) for k in FINAL_KEYS})))
        inputs = get_dict(md, "input_hashes", w)
        images.setdefault((get(inputs, "train_labels", str, w), get_int(md, "test_count", w)), []).append(
            (b.subject, _canon({k: inputs.get(k) for k in ("train_images", "test_images")})))
    if reference is not None:
        ref_key = (get_int(reference, "config.seed", "frozen"), get_int(reference, "config.depth", "frozen"))
        initial.setdefault(ref_key, []).insert(0, ("frozen reference", _canon(reference.get("initial_parameter_sha256"))))
    for check_id, groups, what in (("metadata.initial_parameter_sha256", initial, "initial parameters of one (seed, depth)"),
                                   ("metadata.final_state", finals, "final state of one computation (inputs, config, "
                                    "workspace, board, software)"),
                                   ("metadata.image_hashes", images, "image hashes of one set of inputs")):
        out += same_within_groups(check_id, groups.values(), what=what)
    return out


def same_within_groups(check_id: str, groups: Iterable[list[tuple[str, Any]]], *, what: str) -> list[CheckResult]:
    """One verdict per group of two or more (subject, value) pairs: every value is the first one's."""
    out = []
    for members in groups:
        if len(members) < 2:
            continue
        first = members[0][1]
        odd = [s for s, v in members if v != first]
        subject = members[0][0] if not odd else odd[0]
        out.append(check_true(check_id, subject, not odd,
                              f"{what}: {', '.join(odd[:3])} differ{'s' if len(odd) == 1 else ''} from "
                              f"{members[0][0]} ({len(members)} records of the same computation)",
                              recomputed=len(members)))
    return out


BOARD_FACTS: dict[str, dict[str, int]] = {
    "NVIDIA A100-SXM4-40GB": {"total_memory_bytes": 42_405_855_232, "l2_cache_bytes": 41_943_040, "sm_count": 108,
                              "memory_clock_khz": 1_215_000},
    "NVIDIA A100-SXM4-80GB": {"total_memory_bytes": 85_094_825_984, "l2_cache_bytes": 41_943_040, "sm_count": 108,
                              "memory_clock_khz": 1_593_000},
    "NVIDIA H200": {"total_memory_bytes": 150_109_880_320, "l2_cache_bytes": 62_914_560, "sm_count": 132,
                    "memory_clock_khz": 3_201_000},
}
"""What each board the archives name reports about itself (ncu device attributes and torch device
properties, as read on those boards: docs/device-facts.md and the original's profiles). A record's
board name and its size facts must agree; an unknown board is only checked for self-consistency."""
ATTRIBUTE_FACTS = {"device__attribute_total_memory": "total_memory_bytes", "device__attribute_l2_cache_size": "l2_cache_bytes",
                   "device__attribute_multiprocessor_count": "sm_count",
                   "device__attribute_memory_clock_rate": "memory_clock_khz"}


def _cell(value: Any) -> int | None:
    try:
        return int(str(value).replace(",", ""))
    except ValueError:
        return None


def check_board_attributes(attrs: Mapping[str, Any], *, subject: str, where: str) -> CheckResult:
    """ncu's device attributes (name, total memory, L2, SMs, memory clock) describe one known board."""
    name = get(attrs, "device__attribute_display_name", str, where)
    facts = BOARD_FACTS.get(name)
    got = {fact: _cell(attrs.get(attr)) for attr, fact in ATTRIBUTE_FACTS.items()}
    if facts is None:
        known = [n for n, fs in BOARD_FACTS.items() if fs == got]
        return check_true("device.board_facts", subject, not known and all(v is not None and v > 0 for v in got.values()),
                          f"device attributes {got} are those of {known or 'no board'}, not of {name!r}", recorded=got)
    return check_equal("device.board_facts", subject, got, facts, what=f"device attributes vs what a {name} reports")


def check_board_hardware(hardware: Mapping[str, Any], *, subject: str, where: str, name_key: str = "name") -> CheckResult:
    """A fixture's ``hardware`` block (torch device properties) agrees with its board's known facts."""
    name = get(hardware, name_key, str, where)
    facts = BOARD_FACTS.get(name)
    got = {k: get(hardware, k, None, where) for k in ("total_memory_bytes", "l2_cache_bytes", "sm_count")
           if k in hardware}
    if facts is None:
        return check_true("device.board_facts", subject, all(isinstance(v, int) and v > 0 for v in got.values()),
                          f"hardware facts of {name!r} are not positive integers: {got}", recorded=got)
    return check_equal("device.board_facts", subject, got, {k: facts[k] for k in got},
                       what=f"hardware block vs what a {name} reports")


INVENTORY_TENSOR_KEYS = ("name", "storage_id", "shape", "stride", "dtype", "storage_offset", "logical_bytes")
INVENTORY_STORAGE_KEYS = ("storage_id", "device", "bytes", "aliases")


def inventory_structure(inventory: Mapping[str, Any], where: str) -> dict:
    """The named-storage inventory without device addresses (names, shapes, strides, dtypes, offsets, bytes)."""
    tensors = get_list(inventory, "named_tensors", where)
    storages = get_list(inventory, "unique_storages", where)
    return {"named_tensors": [{k: get(t, k, None, where) for k in INVENTORY_TENSOR_KEYS} for t in tensors],
            "unique_storages": [{k: get(s, k, None, where) for k in INVENTORY_STORAGE_KEYS} for s in storages],
            "is_per_kernel_working_set": get(inventory, "is_per_kernel_working_set", bool, where),
            "cache_residency_established": get(inventory, "cache_residency_established", bool, where)}


def check_inventory_structure(inventory: Mapping[str, Any], reference: Mapping[str, Any], *, subject: str,
                              where: str) -> CheckResult:
    """The inventory's structure equals the frozen reference's (the same model and buffers; spec 4.1).

    Device addresses are allocator facts of the run (their uniqueness is checked by
    :func:`verify.checks.memory.check_inventory`); everything else is fixed by the learner.
    """
    return check_equal("memory.inventory.structure", subject, inventory_structure(inventory, where),
                       inventory_structure(reference, "frozen reference"),
                       what="named tensors and storages (names, shapes, strides, dtypes, offsets, bytes, aliases) vs "
                            "the frozen reference")
