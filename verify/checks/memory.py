"""Memory checks over a fixture record's ``memory`` and ``buffer_inventory`` (spec 4.1, 7.3).

Invariants (fresh process): entry allocated = entry reserved = 0; 0 < live <= peak;
after-prepare <= peak; reserved >= live; peak reserved >= peak; added peak = peak − entry;
unique storage ids and (device, address) pairs; alias lists consistent; logical bytes =
prod(shape) × itemsize <= storage bytes; named total consistent and <= live; unnamed =
live − named. Reductions against the ``:4096:8`` baseline are recomputed from peaks.
"""

from __future__ import annotations

import math

from verify.checks import FLOAT_ABS_TOL, FLOAT_REL_TOL
from verify.records import get, get_dict, get_int, get_list, get_str
from verify.result import CheckResult, check_close, check_equal, check_true

ITEMSIZE_BYTES = {"torch.float32": 4, "torch.float64": 8, "torch.int64": 8, "torch.int32": 4,
                  "torch.uint8": 1, "torch.bool": 1, "torch.float16": 2, "torch.bfloat16": 2}
MIB = 1 << 20


def check_fixture_memory(memory: dict, *, subject: str, where: str) -> list[CheckResult]:
    """Allocator invariants of one fresh-process fixture run.

    Returns verdicts; ``memory.peak_allocated_bytes`` carries the verified peak.
    """
    entry = get_int(memory, "allocated_before_prepare_bytes", where)
    entry_res = get_int(memory, "reserved_before_prepare_bytes", where)
    after_prepare = get_int(memory, "allocated_after_prepare_bytes", where)
    peak = get_int(memory, "prepare_and_invoke_peak_allocated_bytes", where)
    live = get_int(memory, "allocated_after_invoke_bytes", where)
    reserved = get_int(memory, "reserved_after_invoke_bytes", where)
    peak_res = get_int(memory, "prepare_and_invoke_peak_reserved_bytes", where)
    added = get_int(memory, "added_peak_over_entry_allocated_bytes", where)
    t = check_true
    return [
        t("memory.entry_empty", subject, entry == 0 and entry_res == 0,
          f"allocator not empty at entry (allocated {entry}, reserved {entry_res}): not a fresh process",
          recorded=[entry, entry_res]),
        t("memory.live_within_peak", subject, 0 < live <= peak, f"need 0 < live {live} <= peak {peak}",
          recorded=[live, peak]),
        t("memory.after_prepare_within_peak", subject, after_prepare <= peak,
          f"after-prepare {after_prepare} exceeds peak {peak}", recorded=[after_prepare, peak]),
        t("memory.reserved_covers_live", subject, reserved >= live, f"reserved {reserved} < live {live}",
          recorded=[reserved, live]),
        t("memory.peak_reserved_covers_peak", subject, peak_res >= peak,
          f"peak reserved {peak_res} < peak allocated {peak}", recorded=[peak_res, peak]),
        check_equal("memory.added_peak_over_entry_allocated_bytes", subject, added, peak - entry,
                    what="added peak = peak − entry"),
        t("memory.peak_allocated_bytes", subject, 0 < peak and max(after_prepare, live) <= peak <= peak_res,
          f"peak allocated {peak} is not a peak: it must be positive, at least after-prepare {after_prepare} and live "
          f"{live}, at most peak reserved {peak_res}", recorded=peak, recomputed=peak),
        t("memory.peak_reserved_bytes", subject, 0 < peak_res and reserved <= peak_res,
          f"peak reserved {peak_res} is not a peak: it must be positive and at least reserved-after-invoke {reserved}",
          recorded=peak_res, recomputed=peak_res),
    ]


def check_inventory(inventory: dict, live_bytes: int, *, subject: str, where: str) -> list[CheckResult]:
    """Named-storage inventory: ids, addresses, aliases, logical bytes, totals.

    Args:
        inventory: the ``buffer_inventory`` object.
        live_bytes: allocated bytes after the invocation (``allocated_after_invoke_bytes``).
    """
    out: list[CheckResult] = []
    tensors = get_list(inventory, "named_tensors", where)
    storages = get_list(inventory, "unique_storages", where)
    ids = [get_int(s, "storage_id", where) for s in storages]
    pairs = [(get_str(s, "device", where), get_int(s, "address", where)) for s in storages]
    out.append(check_true("memory.inventory.unique_storages", subject,
                          len(set(ids)) == len(ids) and len(set(pairs)) == len(pairs),
                          "storage ids or (device, address) pairs repeat", recomputed=len(storages)))
    by_id = {get_int(s, "storage_id", where): s for s in storages}
    alias_ok = True
    logical_ok = True
    bad_logical = ""
    aliases_seen: dict[int, list[str]] = {i: [] for i in by_id}
    for i, tensor in enumerate(tensors):
        w = f"{where}: buffer_inventory.named_tensors.{i}"
        name = get_str(tensor, "name", w)
        sid = get_int(tensor, "storage_id", w)
        shape = [int(v) for v in get_list(tensor, "shape", w)]
        dtype = get_str(tensor, "dtype", w)
        logical = get_int(tensor, "logical_bytes", w)
        if sid not in by_id:
            alias_ok = False
            continue
        aliases_seen[sid].append(name)
        size = ITEMSIZE_BYTES.get(dtype)
        expect = math.prod(shape) * size if size is not None else None
        storage_bytes = get_int(by_id[sid], "bytes", where)
        if expect is None or logical != expect or logical > storage_bytes:
            logical_ok = False
            bad_logical = bad_logical or f"{name}: logical {logical}, prod(shape)×itemsize {expect}, storage {storage_bytes}"
    for sid, storage in by_id.items():
        if sorted(get_list(storage, "aliases", where)) != sorted(aliases_seen[sid]):
            alias_ok = False
    out.append(check_true("memory.inventory.aliases", subject, alias_ok,
                          "alias lists do not match the named tensors' storage ids"))
    out.append(check_true("memory.inventory.logical_bytes", subject, logical_ok,
                          f"logical bytes inconsistent ({bad_logical})", recomputed=len(tensors)))
    named_total = sum(get_int(s, "bytes", where) for s in storages)
    out.append(check_equal("memory.inventory.unique_named_storage_bytes", subject,
                           get(inventory, "unique_named_storage_bytes", None, where), named_total,
                           what="named storage total"))
    out.append(check_equal("memory.inventory.allocator_allocated_bytes", subject,
                           get(inventory, "allocator_allocated_bytes", None, where), live_bytes,
                           what="allocator bytes at inventory = live after invoke"))
    out.append(check_true("memory.inventory.named_within_live", subject, named_total <= live_bytes,
                          f"named storage {named_total} exceeds live {live_bytes}", recorded=[named_total, live_bytes]))
    out.append(check_equal("memory.inventory.unnamed_live_allocated_bytes", subject,
                           get(inventory, "allocated_bytes_without_named_storage_reference", None, where),
                           live_bytes - named_total, what="unnamed = live − named"))
    return out


def derived_memory(record: dict, where: str) -> dict:
    """The analyzer's memory summary fields recomputed from a fixture record (spec 7.3)."""
    memory = get_dict(record, "memory", where)
    inventory = get_dict(record, "buffer_inventory", where)
    peak = get_int(memory, "prepare_and_invoke_peak_allocated_bytes", where)
    live = get_int(memory, "allocated_after_invoke_bytes", where)
    named = sum(get_int(s, "bytes", where) for s in get_list(inventory, "unique_storages", where))
    l2 = get_int(record, "cache_reference.bytes", where)
    return {
        "peak_allocated_bytes": peak,
        "live_allocated_bytes": live,
        "peak_reserved_bytes": get_int(memory, "prepare_and_invoke_peak_reserved_bytes", where),
        "named_storage_bytes": named,
        "unnamed_live_allocated_bytes": live - named,
        "peak_allocated_mib": peak / MIB,
        "nominal_l2_reference_bytes": l2,
        "peak_allocated_below_nominal_l2_capacity": peak < l2,
    }


def check_memory_summary(summary: dict, record: dict, *, subject: str, where: str, record_where: str) -> list[CheckResult]:
    """A memory summary (the original's summary.json ``memory``) equals the fields derived from the record."""
    derived = derived_memory(record, record_where)
    out = []
    for key, value in derived.items():
        rec = get(summary, key, None, where)
        if isinstance(value, float):
            out.append(check_close(f"memory.summary.{key}", subject, rec, value, rel_tol=FLOAT_REL_TOL,
                                   abs_tol=FLOAT_ABS_TOL, what=key))
        else:
            out.append(check_equal(f"memory.summary.{key}", subject, rec, value, what=key))
    return out


def reductions(baseline_peak: int, peak: int) -> dict[str, float | int]:
    """Reductions of a workspace's peak against the baseline's (spec 7.3)."""
    saved = baseline_peak - peak
    return {"peak_allocated_bytes_saved": saved,
            "peak_allocated_reduction_percent": 100.0 * saved / baseline_peak,
            "peak_allocated_ratio_to_baseline": peak / baseline_peak}
