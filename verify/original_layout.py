"""The known layout of the original study's evidence (``evidence/rev88-original``) and its
integrity: internal sha256 chains, recorded character counts, and bundle pins.

Spec appendix A: 35 of the 46 JSON files are confirmed by a sha256 that another retained
file records (:data:`SHA_CHAIN`); the other 11 only by their character count
(:data:`LENGTH_ONLY`). So that a single changed byte in one of those 11 is still caught,
this bundle also pins their sha256 as shipped (:data:`BUNDLE_PINS`); such a verdict says
plainly that the pin is the bundle's, not the original's.

Binary files the original references but that were never retained (predictions ``.npy``,
profile ``.json.gz``, ``.ncu-rep.gz``) are optional members: absent gives UNAVAILABLE in
the checks; present, they must match the sha256 the original recorded.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping
from pathlib import Path

from verify import safeio
from verify.integrity import ArchiveFiles, content_limit, walk_archive
from verify.records import RecordError, get, parse_json
from verify.result import CheckResult, check_equal, failed, passed

DRAWS = tuple(range(11))

# (target file, recording file, key path inside the recording file)
SHA_CHAIN: tuple[tuple[str, str, str | tuple[str, ...]], ...] = (
    ("protocol.json", "draw-manifest.json", "protocol_sha256"),
    ("protocol.json", "prediction-manifest.json", "protocol_sha256"),
    ("protocol.json", "submission.json", "sources.protocol_sha256"),
    ("protocol.json", "verification.json", "protocol_sha256"),
    ("protocol.json", "cache-audit/plan.json", "base_protocol_sha256"),
    ("protocol.json", "cache-audit/summary.json", "base_protocol_sha256"),
    ("draw-manifest.json", "prediction-manifest.json", "draw_manifest_sha256"),
    ("prediction-manifest.json", "accuracy.json", "prediction_manifest_sha256"),
    ("prediction-manifest.json", "submission.json", "sources.prediction_manifest_sha256"),
    ("prediction-manifest.json", "verification.json", "prediction_manifest_sha256"),
    ("accuracy.json", "submission.json", "sources.accuracy_sha256"),
    ("accuracy.json", "cache-audit/summary.json", "qualification.base_accuracy_sha256"),
    ("validation.json", "protocol.json", "validation_sha256"),
    ("submission.json", "cache-audit/submission.json", "base_submission_sha256"),
    ("cache-audit/plan.json", "cache-audit/summary.json", "plan_sha256"),
    ("cache-audit/summary.json", "cache-audit/submission.json", ("evidence_sha256", "summary.json")),
    ("cache-audit/cuda-validation.json", "cache-audit/submission.json", ("evidence_sha256", "cuda-validation.json")),
    ("cache-audit/small-workspace.json", "cache-audit/submission.json", ("evidence_sha256", "small-workspace.json")),
    ("cache-audit/baseline.json", "cache-audit/summary.json", "comparisons.baseline.result_sha256"),
    ("cache-audit/small-workspace.json", "cache-audit/summary.json", "comparisons.small-workspace.result_sha256"),
    ("cache-audit/zero-workspace.json", "cache-audit/summary.json", "comparisons.zero-workspace.result_sha256"),
    *((f"results/draw-{i:02d}.json", "prediction-manifest.json", f"entries.{i}.result_sha256") for i in DRAWS),
    *((f"cache-audit/qualify-{i:02d}.json", "cache-audit/summary.json", f"qualification.draws.{i}.result_sha256")
      for i in DRAWS),
    *(("config.json", f"cache-audit/{n}.json", "result.config_file_sha256")
      for n in ("baseline", "small-workspace", "zero-workspace", *(f"qualify-{i:02d}" for i in DRAWS))),
)

# Character counts recorded in spec appendix A (the only original-side check there is).
LENGTH_ONLY: dict[str, int] = {
    "validation-plan.json": 3705,
    "execution.json": 2408,
    "verification.json": 3528,
    "cache-audit/submission.json": 5254,
    "cache-audit/profile-plan.json": 644,
    "cache-audit/execution.json": 2538,
    "cache-audit/probe.json": 2173,
    "cache-audit/development/profile-attempt1/profile-baseline-task.json": 1631,
    "cache-audit/development/profile-attempt1/profile-baseline-training.json": 1639,
    "cache-audit/development/profile-attempt1/profile-small-task.json": 1629,
    "cache-audit/development/profile-attempt1/profile-small-training.json": 1637,
}

# sha256 of the 11 length-only files as this bundle shipped them (pinned by the bundle).
BUNDLE_PINS: dict[str, str] = {
    "validation-plan.json": "e71ad30d12788b0b6b115683307344fb18d682283ad2f3e1a7528cd6cb17c9f1",
    "execution.json": "155a91a22af5c383d98644a0f4cd4ebe201412ff247b0ffbc64e6fb10b017fea",
    "verification.json": "181c4f15a3bd36daeeedeab8a1034d33d43e09dd372d5b477679d85771815d8f",
    "cache-audit/submission.json": "7f57949c57c5d3ec33b85af01bad712bc170cbbcb34d4705a7b9ce2cc279e8e4",
    "cache-audit/profile-plan.json": "2bc2a7636f8150ed7600928a85a64384e5cadd4afd0895cfd2aeed6abe63011d",
    "cache-audit/execution.json": "c6cc0f039861ac770deb5b344e60d13806bbd790c38664c991db7121f790cfa9",
    "cache-audit/probe.json": "1c09c909f8f4923c51ff67c704d8d616952692e992b3267c20b50c1fc5df6d5d",
    "cache-audit/development/profile-attempt1/profile-baseline-task.json":
        "0eb84a47904e0dbff643dbbb14915a7141c4a88b90a6b95b6e9bd13c833c29a8",
    "cache-audit/development/profile-attempt1/profile-baseline-training.json":
        "715aeafd2a5ac94c3a8e55d5d1736fc559d6c6d9dffe0477ce62109c8f3e613c",
    "cache-audit/development/profile-attempt1/profile-small-task.json":
        "f9a32d74ceff02fc53face4cca29db825591a063ba455598db15b59b3c080464",
    "cache-audit/development/profile-attempt1/profile-small-training.json":
        "bd7dddfd1830621f96e5710aaacbf763b21ca045b6471a741e6e9825bcb19967",
}

SHA_VERIFIED: tuple[str, ...] = tuple(sorted({t for t, _, _ in SHA_CHAIN}))
KNOWN_JSON: tuple[str, ...] = tuple(sorted(set(SHA_VERIFIED) | set(LENGTH_ONLY)))

PROFILES = ("profile-baseline-task", "profile-baseline-training", "profile-small-task", "profile-small-training")

# Optional binary members: path -> (recording file, key path of the recorded file sha256).
OPTIONAL_BINARIES: dict[str, tuple[str, str]] = {
    **{f"predictions/draw-{i:02d}.npy": ("prediction-manifest.json", f"entries.{i}.prediction_sha256") for i in DRAWS},
    **{f"validation-predictions/candidate-{i:02d}.npy": ("validation.json", f"records.{i}.prediction_sha256")
       for i in range(16)},
    **{f"cache-audit/qualify-{i:02d}-result.predictions.npy":
       ("cache-audit/summary.json", f"qualification.draws.{i}.prediction_sha256") for i in DRAWS},
    **{f"cache-audit/{n}-result.predictions.npy": ("cache-audit/summary.json", f"comparisons.{n}.prediction_sha256")
       for n in ("baseline", "small-workspace", "zero-workspace")},
    **{f"cache-audit/{p}-result.predictions.npy": ("cache-audit/summary.json", f"profiles.{p}.prediction_sha256")
       for p in PROFILES},
    **{f"cache-audit/{p}.json.gz": ("cache-audit/summary.json", f"profiles.{p}.result_sha256") for p in PROFILES},
    **{f"cache-audit/{p}-profile.ncu-rep.gz": ("cache-audit/summary.json", f"profiles.{p}.ncu_report_sha256")
       for p in PROFILES},
}


BUNDLE_ADDED: dict[str, str] = {
    "predictions/PROVENANCE.md": "9c84128d02a535b2d86d6edb6a82229a5afa01155efedd2ae1928e1094e7a26c",
}
"""Files this bundle adds to its copy of the original (not in any of the original's sha chains), pinned
by sha256: the provenance note of the restored prediction files (``predictions/draw-XX.npy``, byte
copies of the H200 archive's qualification predictions whose sha256 the original's
``prediction-manifest.json`` pins)."""


def is_original_archive(root: Path) -> bool:
    """True for a folder laid out like the original evidence (no manifest.json, protocol.json present)."""
    return (root / "protocol.json").is_file() and (root / "prediction-manifest.json").is_file() \
        and not os.path.lexists(root / "manifest.json")


def check_sha_chains(raw: Mapping[str, bytes], parsed: Mapping[str, object]) -> tuple[list[CheckResult], set[str]]:
    """The internal sha256 chains (:data:`SHA_CHAIN`) over the files' bytes.

    Args:
        raw: archive-relative path -> stored bytes of the known JSON files present.
        parsed: path -> parsed JSON of those that parse.

    Returns:
        ``(verdicts, targets that are absent or whose recorded sha256 differs)``.
    """
    results: list[CheckResult] = []
    bad: set[str] = set()
    sha = {rel: hashlib.sha256(data).hexdigest() for rel, data in raw.items()}
    for target, recorder, key in SHA_CHAIN:
        if target not in sha or recorder not in parsed:
            bad.add(target)
            continue
        subject = f"{target} <- {recorder}:{key if isinstance(key, str) else '.'.join(key)}"
        try:
            recorded = get(parsed[recorder], key, str, recorder)
        except RecordError as exc:
            results.append(failed("original.integrity.sha_chain", subject, str(exc)))
            bad.add(target)
            continue
        res = check_equal("original.integrity.sha_chain", subject, recorded, sha[target],
                          what=f"sha256 of {target} as recorded in {recorder}")
        results.append(res)
        if res.status.value == "FAIL":
            bad.add(target)
    return results, bad


def verify_original_archive(root: Path) -> ArchiveFiles:
    """Integrity of the original archive: layout, sha chains, lengths, bundle pins.

    Only the checks that fit its layout apply (it is the frozen third-party copy and is not
    in this bundle's canonical byte form by contract): regular files only, each read bounded
    by :func:`verify.integrity.content_limit`, JSON parsed strictly (no repeated key, at most
    :data:`verify.records.MAX_JSON_DEPTH` levels).

    Returns:
        :class:`ArchiveFiles` whose ``content`` holds the verified JSON bytes (and any
        optional binary that matched its recorded sha256).
    """
    out = ArchiveFiles(root=root)
    t0 = time.perf_counter()
    present, special = walk_archive(root)
    for rel in special:
        out.results.append(failed("original.integrity.symlink", rel,
                                  "symbolic link or special file inside the archive: remove it"))
    known = set(KNOWN_JSON) | set(OPTIONAL_BINARIES)
    for rel in present:
        if rel in BUNDLE_ADDED:
            try:
                added = safeio.read_regular(root / rel, limit=content_limit(rel)[1], where=rel)
            except RecordError as exc:
                out.results.append(failed("original.integrity.regular_file", rel, str(exc)))
                continue
            out.results.append(check_equal("original.integrity.bundle_added", rel, BUNDLE_ADDED[rel],
                                           hashlib.sha256(added).hexdigest(),
                                           what="sha256 pinned by this bundle for the file it adds to the original"))
        elif rel not in known:
            out.results.append(failed("original.integrity.unlisted", rel,
                                      "file is not part of the original evidence layout: remove it"))
    if "predictions/PROVENANCE.md" in present:  # the note says all 11 were restored: none may go missing
        for i in DRAWS:
            rel = f"predictions/draw-{i:02d}.npy"
            if rel not in present:
                out.results.append(failed("original.integrity.restored_missing", rel,
                                          "predictions/PROVENANCE.md says this bundle restored this file, but it is "
                                          "absent: restore it from the repository (git checkout -- evidence/)"))
    raw: dict[str, bytes] = {}
    sha: dict[str, str] = {}
    for rel in KNOWN_JSON:
        path = root / rel
        if rel not in present:
            out.results.append(failed("original.integrity.missing", rel, "original evidence file is absent "
                                      "(or a link): restore it from the repository"))
            continue
        try:
            raw[rel] = safeio.read_regular(path, limit=content_limit(rel)[1], where=rel)
        except RecordError as exc:
            out.results.append(failed("original.integrity.regular_file", rel, str(exc)))
            continue
        sha[rel] = hashlib.sha256(raw[rel]).hexdigest()
    parsed: dict[str, object] = {}
    for rel, data in raw.items():
        try:
            parsed[rel] = parse_json(data, rel)
        except RecordError as exc:
            out.results.append(failed("original.integrity.json", rel, str(exc)))
    chain_results, bad = check_sha_chains(raw, parsed)
    out.results.extend(chain_results)
    for rel, length in LENGTH_ONLY.items():
        if rel not in raw:
            bad.add(rel)
            continue
        r1 = check_equal("original.integrity.length", rel, length, len(raw[rel]),
                         what="character count recorded in spec appendix A")
        r2 = check_equal("original.integrity.bundle_pin_sha256", rel, BUNDLE_PINS[rel], sha[rel],
                         what="sha256 pinned by this bundle when it shipped the copy (the original records none)")
        out.results.extend([r1, r2])
        if r1.status.value == "FAIL" or r2.status.value == "FAIL":
            bad.add(rel)
    for rel in KNOWN_JSON:
        if rel in raw and rel in parsed and rel not in bad:
            out.content[rel] = raw[rel]
    ok_json = len(out.content) == len(KNOWN_JSON)
    out.results.append(passed("original.integrity.files", str(root.name), recomputed=len(out.content),
                              reason=f"{len(SHA_VERIFIED)} files sha-verified through recorded chains, "
                                     f"{len(LENGTH_ONLY)} length-verified and pinned")
                       if ok_json else
                       failed("original.integrity.files", str(root.name),
                              f"{len(KNOWN_JSON) - len(out.content)} of {len(KNOWN_JSON)} evidence files failed "
                              "integrity", recomputed=len(out.content)))
    for rel, (recorder, key) in OPTIONAL_BINARIES.items():
        if rel not in present or recorder not in out.content:
            continue
        try:
            data = safeio.read_regular(root / rel, limit=content_limit(rel)[1], where=rel)
        except RecordError as exc:
            out.results.append(failed("original.integrity.regular_file", rel, str(exc)))
            continue
        recorded = get(parsed[recorder], key, str, recorder)
        res = check_equal("original.integrity.binary_sha256", rel, recorded, hashlib.sha256(data).hexdigest(),
                          what=f"file sha256 recorded in {recorder}")
        out.results.append(res)
        if res.status.value == "PASS":
            out.content[rel] = data
    out.hashing_s = time.perf_counter() - t0
    return out
