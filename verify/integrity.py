"""Integrity first: every byte of an archive is hashed before any figure is read.

Two layouts are known:

* a **run archive** (ours): ``manifest.json`` lists every file with its size and sha256 of
  the stored bytes and, for ``.gz``, of the decompressed content (docs/ARCHITECTURE.md);
* the **original** archive (``evidence/rev88-original``): no manifest of ours; the known
  46 JSON files are checked through the sha256 values that other retained files record
  (spec appendix A), and the 11 files no original record hashes are checked against their
  recorded character counts and against sha256 pins taken by this bundle when it shipped
  the copy.

Every read goes through :mod:`verify.safeio`: only regular files are opened (``lstat``
first), each file kind has a size limit (:data:`CONTENT_LIMITS`), decompression is
streamed and bounded. Files the layout does not list, paths that leave the archive and
symbolic links or special files are errors.

A run archive must also be in the one byte form its writer (:mod:`bundle.archive`)
produces: every ``.gz`` member one canonical gzip member (:data:`protocol.archive_format.GZIP_HEADER`,
nothing after the trailer); every JSON record (``.json``, ``.json.gz``) and
``manifest.json`` itself canonical JSON (re-serialising the parsed value with
:func:`protocol.archive_format.dumps_canonical` gives the same bytes), without a repeated key and at
most :data:`verify.records.MAX_JSON_DEPTH` levels deep; ``manifest.json``'s ``run_id`` equal
to the folder's name and to ``environment.json.gz``'s ``run_id``.

When a stored hash disagrees, the verdict names the side the evidence points to: the
manifest (subject ``manifest.json``, check ``integrity.manifest_entry``) when the file is
provably the recorded one (its sha256 matches while another field does not; or a ``.gz``
file's decompressed sha256 and size match while its stored sha256 does not; or a plain
file's actual sha256 is the one another verified record holds for it), else the file.
"""

from __future__ import annotations

import json as std_json
import os
import re
import stat
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from protocol.archive_format import SCHEMA_VERSION, dumps_canonical
from protocol.errors import BundleError
from verify import safeio
from verify.records import RecordError, get, parse_json
from verify.result import CheckResult, Status, check_equal, failed, passed

MiB = 1024 * 1024

MAX_CONTENT_BYTES = 512 * MiB
"""Refuse to decompress more than 512 MiB from one ``.gz`` file (the largest kind's limit)."""

KEEP_CONTENT_BYTES = 64 * MiB
"""Decompressed content up to this size stays in memory for the checks."""

KEEP_TEXT_BYTES = 128 * MiB
"""Raw tool output (``.txt.gz``) up to this size stays in memory: the profile checks read the metric
query's listing (97 MB shipped) whole, and a re-read would inflate and hash it a second time."""

MANIFEST_NAME = "manifest.json"
MANIFEST_LIMIT_BYTES = 16 * MiB
"""Largest ``manifest.json`` accepted (the shipped one is 40 kB)."""

CONTENT_LIMITS: tuple[tuple[str, str, int], ...] = (
    (".ncu-rep.gz", "Nsight Compute report", MAX_CONTENT_BYTES),
    (".ncu-output.txt.gz", "ncu console output", 4 * MiB),
    (".txt.gz", "raw tool output", 256 * MiB),
    (".csv.gz", "ncu raw-page CSV", 4 * MiB),
    (".jsonl.gz", "NVML call log", 64 * MiB),
    (".json.gz", "JSON record", 16 * MiB),
    (".json", "JSON record", 16 * MiB),
    (".npy", "array", 16 * MiB),
    (".npz", "input archive", 16 * MiB),
    (".cu.gz", "CUDA kernel source", 4 * MiB),
)
"""(name suffix, kind, largest content in bytes): decompressed size for ``.gz``, else the file
size; the first matching suffix applies. Shipped maxima: report 116 MiB, metric query 92 MiB,
NVML log 94 kB, CSV 12 kB, record 74 kB, array 78 kB."""

OTHER_CONTENT_LIMIT = 16 * MiB
"""Limit of a member whose name matches none of :data:`CONTENT_LIMITS`."""

MANIFEST_KEYS = ("schema_version", "run_id", "files")
ENTRY_KEYS = ("path", "size_bytes", "sha256", "content_sha256", "content_size_bytes")
_SHA256 = re.compile(r"[0-9a-f]{64}")


def content_limit(rel: str) -> tuple[str, int]:
    """``(kind, largest content in bytes)`` for an archive-relative path (see :data:`CONTENT_LIMITS`)."""
    for suffix, kind, limit in CONTENT_LIMITS:
        if rel.endswith(suffix):
            return kind, limit
    return "file", OTHER_CONTENT_LIMIT


def is_json_record(rel: str) -> bool:
    """Whether a member is a JSON record (``.json`` or ``.json.gz``; NVML ``.jsonl.gz`` logs are not)."""
    return rel.endswith(".json") or rel.endswith(".json.gz")


@dataclass
class ArchiveFiles:
    """What integrity established: verified content by archive-relative path.

    Attributes:
        root: the archive folder.
        content: path -> verified bytes (decompressed for ``.gz``); large content is
            re-read and re-verified on demand by :meth:`read`.
        expected: path -> (sha256 of content, size) for files not kept in memory.
        results: the integrity verdicts.
        hashing_s: wall seconds spent reading, hashing and decompressing.
        entries: path -> manifest entry of every verified member (run archives only).
        background: work started after integrity that checks collect later (the
            ``.ncu-rep`` reads of :mod:`verify.ncu_reports`), or None.
        shared: values derived from the verified files once and read by several check families
            (:func:`verify.checks.run.fixture_records`), by name.
    """

    root: Path
    content: dict[str, bytes | None] = field(default_factory=dict)
    expected: dict[str, tuple[str, int]] = field(default_factory=dict)
    results: list[CheckResult] = field(default_factory=list)
    hashing_s: float = 0.0
    entries: dict[str, dict] = field(default_factory=dict)
    background: object = None
    json_checked: set[str] = field(default_factory=set)
    shared: dict[str, object] = field(default_factory=dict)

    def stored_entry(self, path: str) -> dict | None:
        """The manifest entry (``size_bytes``, ``sha256``, ``content_sha256``, ``content_size_bytes``)
        of a verified member, or None (not a member, or not a run archive)."""
        return self.entries.get(path) if path in self.content else None

    def content_sha256(self, path: str) -> str | None:
        """sha256 (hex) of a verified member's content (decompressed for ``.gz``) as integrity computed it
        from the bytes :meth:`read` returns, or None (not a member, or not a run archive)."""
        entry = self.stored_entry(path)
        if entry is None:
            return None
        return entry["content_sha256"] if path.endswith(".gz") else entry["sha256"]

    @property
    def ok(self) -> bool:
        """True when no integrity check FAILed."""
        return all(r.status is not Status.FAIL for r in self.results)

    def has(self, path: str) -> bool:
        """Whether ``path`` is a verified file of the archive."""
        return path in self.content

    def read(self, path: str) -> bytes:
        """Verified content of ``path`` (decompressed for ``.gz``).

        Raises:
            RecordError: the file is not a verified member, or changed since it was hashed.
        """
        if path not in self.content:
            raise RecordError(f"file is not a verified member of the archive ({self.root / path}): "
                              "check the manifest")
        data = self.content[path]
        if data is not None:
            return data
        t0 = time.perf_counter()
        sha, size = self.expected[path]
        member = safeio.read_member(self.root / path, gz=path.endswith(".gz"), content_limit=content_limit(path)[1],
                                    keep=size, where=path)
        self.hashing_s += time.perf_counter() - t0
        if member.content is None or member.content_sha256 != sha or member.content_size != size:
            raise RecordError(f"file changed after it was verified ({self.root / path}): re-run verify")
        return member.content

    def json(self, path: str) -> object:
        """Parsed JSON of a verified member (NaN/Infinity, repeated keys and deep nesting rejected), a fresh
        object on every call.

        A member in :attr:`json_checked` already passed :func:`~verify.records.parse_json` and re-serialises
        byte for byte, so the standard library's parser (C speed, no per-value hooks) gives the same values;
        checks read the same record many times. Any other member goes through the strict parser.

        Raises:
            RecordError: as :meth:`read`, or the strict parser's refusal.
        """
        data = self.read(path)
        return std_json.loads(data) if path in self.json_checked else parse_json(data, path)


def safe_relative(path: object) -> str | None:
    """Return ``path`` if it is a plain archive-relative POSIX path, else None.

    Rejects non-strings, absolute paths, ``..`` or ``.`` parts, backslashes, empty parts.
    """
    if not isinstance(path, str) or not path or "\\" in path or "\x00" in path:
        return None
    p = PurePosixPath(path)
    if p.is_absolute() or any(part in ("..", ".", "") for part in path.split("/")):
        return None
    return path


def is_hidden(rel: str) -> bool:
    """Whether an archive-relative POSIX path has a hidden part (``.staging/…``, ``.work/…``, ``.x``).

    As bundle.archive's manifest writer, which never lists such files.
    """
    return any(part.startswith(".") for part in rel.split("/"))


def walk_archive(root: Path) -> tuple[list[str], list[str]]:
    """List regular files (relative POSIX paths) and symlinks/special entries under ``root``."""
    files: list[str] = []
    bad: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = Path(dirpath).relative_to(root)
        for name in list(dirnames):
            full = Path(dirpath) / name
            if full.is_symlink():
                bad.append((rel_dir / name).as_posix())
                dirnames.remove(name)
        for name in filenames:
            full = Path(dirpath) / name
            mode = os.lstat(full).st_mode
            rel = (rel_dir / name).as_posix()
            if stat.S_ISREG(mode):
                files.append(rel)
            else:
                bad.append(rel)
    return sorted(files), sorted(bad)


def verify_run_archive(root: Path) -> ArchiveFiles:
    """Check ``root/manifest.json`` against the files (one of our run archives).

    Args:
        root: the run folder.

    Returns:
        :class:`ArchiveFiles` with one verdict per file and aspect (``integrity.size_bytes``,
        ``integrity.sha256``, ``integrity.content_sha256``, ``integrity.content_size_bytes``,
        ``integrity.gzip``: canonical gzip, ``integrity.json`` / ``integrity.canonical_json``:
        JSON records) plus layout verdicts (``integrity.manifest``: readable, well-formed;
        ``integrity.manifest_canonical``; ``integrity.manifest_entry``: an entry the evidence
        shows to be wrong; ``integrity.run_id``; ``integrity.unlisted``, ``integrity.symlink``,
        ``integrity.missing``, ``integrity.regular_file``,
        ``integrity.size_limit``, ``integrity.hidden``: any hidden file left in the folder,
        as the writer never lists one). A ``manifest.json`` that is not a regular file, too
        large, or not a well-formed manifest gives one ``integrity.manifest`` FAIL and nothing
        else is read.
    """
    out = ArchiveFiles(root=root)
    t0 = time.perf_counter()
    try:
        raw = safeio.read_regular(root / MANIFEST_NAME, limit=MANIFEST_LIMIT_BYTES, where=MANIFEST_NAME)
        manifest = parse_json(raw, MANIFEST_NAME)
        entries = _parse_manifest(manifest)
    except RecordError as exc:
        out.results.append(failed("integrity.manifest", MANIFEST_NAME, str(exc)))
        out.hashing_s = time.perf_counter() - t0
        return out
    out.results.append(passed("integrity.manifest", MANIFEST_NAME, recomputed=len(entries),
                              reason=f"manifest lists {len(entries)} files"))
    out.results += _check_manifest_form(root, raw, manifest, entries)
    present, special = walk_archive(root)
    for rel in special:
        out.results.append(failed("integrity.symlink", rel, "symbolic link or special file inside the archive: "
                                  "replace it by the regular file or remove it"))
    listed = {e["path"] for e in entries}
    for rel in present:
        if is_hidden(rel):
            out.results.append(failed("integrity.hidden", rel, "hidden file in the run folder (scratch of an unfinished "
                                      "phase under .staging/ or .work/?): a completed archive holds only the files "
                                      "its manifest lists; finish or rerun the phase, or delete the file"))
        elif rel != MANIFEST_NAME and rel not in listed:
            out.results.append(failed("integrity.unlisted", rel, "file is not listed in manifest.json: "
                                      "remove it or rebuild the manifest"))
    ambiguous: list[tuple[dict, safeio.Member]] = []
    # lstat first, in order; then the regular files are read, inflated and hashed two at a time (zlib and
    # hashlib release the GIL), while their verdicts are taken in manifest order as before
    opened = [(entry, _precheck(out, entry)) for entry in entries]
    with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
        reads = {entry["path"]: pool.submit(_read_entry, out.root, entry) for entry, ok in opened if ok is True}
        for entry, ok in opened:
            if ok is True:
                _verify_entry(out, entry, ambiguous, reads[entry["path"]])
            elif ok is not False:
                out.results.append(ok)
    _attribute_plain_mismatches(out, ambiguous)
    _check_json_records(out)
    out.results += _check_environment_run_id(out, manifest["run_id"])
    out.hashing_s = time.perf_counter() - t0
    return out


def _parse_manifest(manifest: object) -> list[dict]:
    """The manifest's entries, every field typed and shaped as the writer writes it.

    Raises:
        RecordError: a missing, unknown or wrongly typed key, a path that leaves the archive
            or is hidden, a malformed hash, a negative size, content fields on a plain file
            or missing on a ``.gz`` file, or entries not sorted by path.
    """
    where = MANIFEST_NAME
    version = get(manifest, "schema_version", int, where)
    if version != SCHEMA_VERSION:
        raise RecordError(f"unsupported manifest schema_version {version} ({where}): this verifier reads version "
                          f"{SCHEMA_VERSION}")
    get(manifest, "run_id", str, where)
    unknown = [k for k in manifest if k not in MANIFEST_KEYS]
    if unknown:
        raise RecordError(f"manifest has unknown key {unknown[0]!r} ({where}): the writer writes only "
                          f"{', '.join(MANIFEST_KEYS)}; the manifest is corrupt", where)
    files = get(manifest, "files", list, where)
    entries: list[dict] = []
    for i, item in enumerate(files):
        at = f"{where}: files.{i}"
        p = get(item, "path", str, at)
        if safe_relative(p) is None or p == MANIFEST_NAME:
            raise RecordError(f"path {p!r} leaves the archive or is not a plain relative path "
                              f"({at}): the manifest is corrupt", where)
        if is_hidden(p):
            raise RecordError(f"path {p!r} is hidden ({at}): the writer never lists hidden files "
                              "(.staging/, .work/ scratch); the manifest is corrupt", where)
        at = f"{where}: files.{i}, {p}"
        entry = {
            "path": p,
            "size_bytes": get(item, "size_bytes", int, at),
            "sha256": get(item, "sha256", str, at),
            "content_sha256": get(item, "content_sha256", (str, type(None)), at),
            "content_size_bytes": get(item, "content_size_bytes", (int, type(None)), at),
        }
        unknown = [k for k in item if k not in ENTRY_KEYS]
        if unknown:
            raise RecordError(f"manifest entry has unknown key {unknown[0]!r} ({at}): the manifest is corrupt", where)
        for key in ("sha256", "content_sha256"):
            if entry[key] is not None and not _SHA256.fullmatch(entry[key]):
                raise RecordError(f"{key} {entry[key][:70]!r} is not 64 lowercase hex digits ({at}): the manifest "
                                  "entry is corrupt; restore manifest.json", where)
        for key in ("size_bytes", "content_size_bytes"):
            if entry[key] is not None and entry[key] < 0:
                raise RecordError(f"{key} {entry[key]} is negative ({at}): the manifest entry is corrupt", where)
        if p.endswith(".gz") and (entry["content_sha256"] is None or entry["content_size_bytes"] is None):
            raise RecordError(f"gzip member without content_sha256/content_size_bytes ({at}): "
                              "rebuild the manifest", where)
        if not p.endswith(".gz") and (entry["content_sha256"] is not None or entry["content_size_bytes"] is not None):
            raise RecordError(f"plain file with content_sha256/content_size_bytes ({at}): the writer records them "
                              "for .gz members only; the manifest is corrupt", where)
        entries.append(entry)
    paths = [e["path"] for e in entries]
    if paths != sorted(paths) or len(set(paths)) != len(paths):
        raise RecordError(f"manifest files are not sorted by path or repeat a path ({where}): rebuild the manifest")
    return entries


def _check_manifest_form(root: Path, raw: bytes, manifest: dict, entries: list[dict]) -> list[CheckResult]:
    """``manifest.json`` is byte-for-byte what the writer writes for its values, and names this folder."""
    out: list[CheckResult] = []
    canonical = dumps_canonical({"schema_version": manifest["schema_version"], "run_id": manifest["run_id"],
                                 "files": [{k: e[k] for k in ENTRY_KEYS} for e in entries]}).encode("ascii")
    if raw == canonical:
        out.append(passed("integrity.manifest_canonical", MANIFEST_NAME, recomputed=len(raw),
                          reason="manifest.json is the writer's canonical JSON (2-space indent, key order, one newline)"))
    else:
        at = next((i for i, (a, b) in enumerate(zip(raw, canonical, strict=False)) if a != b), min(len(raw), len(canonical)))
        out.append(failed("integrity.manifest_canonical", MANIFEST_NAME,
                          f"manifest.json is not in the writer's canonical form (first difference at byte {at:,} of "
                          f"{len(raw):,}; key order, whitespace or number spelling changed): the writer never writes "
                          "it so; restore manifest.json", recorded=len(raw), recomputed=len(canonical)))
    name = root.resolve().name
    out.append(check_equal("integrity.run_id", MANIFEST_NAME, manifest["run_id"], name,
                           what="manifest run_id vs the run folder's name (rename the folder back to its run_id)"))
    return out


def _check_environment_run_id(out: ArchiveFiles, run_id: str) -> list[CheckResult]:
    """``environment.json.gz``'s ``run_id`` equals the manifest's (when the record is a verified member)."""
    rel = "environment.json.gz"
    if rel not in out.content or rel not in out.json_checked:
        return []
    try:
        recorded = get(out.json(rel), "run_id", str, rel)
    except RecordError as exc:
        return [failed("integrity.run_id", rel, str(exc))]
    return [check_equal("integrity.run_id", rel, recorded, run_id, what="environment run_id vs manifest run_id")]


def _check_json_records(out: ArchiveFiles) -> None:
    """Every verified JSON record parses strictly and is canonical; failing ones are withdrawn."""
    for rel in sorted(out.content):
        if not is_json_record(rel):
            continue
        data = out.read(rel)
        try:
            value = parse_json(data, rel)
            canonical = dumps_canonical(value).encode("ascii")
        except BundleError as exc:
            out.results.append(failed("integrity.json", rel, str(exc)))
            del out.content[rel]
            continue
        if canonical != data:
            at = next((i for i, (a, b) in enumerate(zip(data, canonical, strict=False)) if a != b),
                      min(len(data), len(canonical)))
            out.results.append(failed("integrity.canonical_json", rel, f"record is not the writer's canonical JSON "
                                      f"(first difference at byte {at:,} of {len(data):,}: whitespace, key order, "
                                      "escaping or number spelling): the bundle never writes it so; restore the file "
                                      "from the run", recorded=len(data), recomputed=len(canonical)))
            del out.content[rel]
            continue
        out.json_checked.add(rel)
        out.results.append(passed("integrity.canonical_json", rel, recomputed=len(data),
                                  reason="canonical JSON: re-serialised byte for byte, no repeated key"))


def _manifest_blame(rel: str, reason: str, *, recorded: object = None, recomputed: object = None) -> CheckResult:
    return failed("integrity.manifest_entry", MANIFEST_NAME, f"the entry for {rel} is wrong: {reason}; the file is the "
                  "one the run wrote, restore manifest.json", recorded=recorded, recomputed=recomputed)


READ_THREADS = 2
"""Members read, inflated and hashed at once by :func:`verify_run_archive`."""


def _precheck(out: ArchiveFiles, entry: dict) -> CheckResult | bool:
    """What ``lstat`` says of a listed member: True (a regular file to read), a FAIL verdict (missing, a
    folder, not examinable), or False (a link or special file, or under a linked folder: the walk reports
    it, and it is never opened)."""
    rel = entry["path"]
    full = out.root / rel
    try:
        mode = os.lstat(full).st_mode
    except FileNotFoundError:
        return failed("integrity.missing", rel, "file listed in manifest.json is absent: restore it from the run")
    except OSError as exc:
        return failed("integrity.regular_file", rel, f"cannot be examined ({exc.strerror})")
    if stat.S_ISDIR(mode):
        return failed("integrity.regular_file", rel, "listed in manifest.json as a file but is a folder: "
                      "restore the file from the run")
    if not stat.S_ISREG(mode):
        return False  # already reported by the walk (symlink or special file); never opened
    return not any(parent.is_symlink() for parent in full.relative_to(out.root).parents if str(parent) != ".")


def _read_entry(root: Path, entry: dict) -> safeio.Member:
    """:func:`verify.safeio.read_member` of a listed member with its kind's limits (in a reader thread)."""
    rel = entry["path"]
    keep = KEEP_TEXT_BYTES if rel.endswith(".txt.gz") else KEEP_CONTENT_BYTES
    return safeio.read_member(root / rel, gz=rel.endswith(".gz"), content_limit=content_limit(rel)[1], keep=keep,
                              where=rel)


def _verify_entry(out: ArchiveFiles, entry: dict, ambiguous: list[tuple[dict, safeio.Member]],
                  read: Future) -> None:
    rel = entry["path"]
    is_gz = rel.endswith(".gz")
    kind, limit = content_limit(rel)
    try:
        m = read.result()
    except RecordError as exc:
        check = "integrity.size_limit" if "more than the" in str(exc) else "integrity.regular_file"
        out.results.append(failed(check, rel, f"{exc} (limit for a {kind}: {limit:,} bytes"
                                  f"{' decompressed' if is_gz else ''})"))
        return
    sha_ok = m.stored_sha256 == entry["sha256"]
    size_ok = m.stored_size == entry["size_bytes"]
    content_ok = not is_gz or (m.content_sha256 == entry["content_sha256"]
                               and m.content_size == entry["content_size_bytes"])
    if sha_ok:
        # These are exactly the bytes the manifest recorded: any other disagreement is the manifest's.
        if m.gzip_problem is not None:
            out.results.append(failed("integrity.size_limit" if m.over_limit else "integrity.gzip", rel,
                                      m.gzip_problem + (f" (limit for a {kind})" if m.over_limit else ""),
                                      recorded=entry["content_sha256"]))
            return
        wrong = [(k, entry[k], v) for k, v in (("size_bytes", m.stored_size), ("content_sha256", m.content_sha256),
                                               ("content_size_bytes", m.content_size))
                 if (k == "size_bytes" or is_gz) and entry[k] != v]
        if wrong:
            k, recorded, actual = wrong[0]
            out.results.append(_manifest_blame(rel, f"its {k} reads {recorded!r} but the file whose sha256 matches "
                                               f"has {actual!r}", recorded=recorded, recomputed=actual))
            return
    elif is_gz and m.gzip_problem is None and content_ok and size_ok:
        out.results.append(_manifest_blame(rel, f"its sha256 reads {entry['sha256']} but the stored bytes hash to "
                                           f"{m.stored_sha256} while their decompressed sha256 and size match the "
                                           "entry (a canonical gzip of that content)",
                                           recorded=entry["sha256"], recomputed=m.stored_sha256))
        return
    elif not is_gz and size_ok:
        ambiguous.append((entry, m))  # decided once every other member is verified
        return
    mine = [check_equal("integrity.size_bytes", rel, entry["size_bytes"], m.stored_size, what="stored size"),
            check_equal("integrity.sha256", rel, entry["sha256"], m.stored_sha256, what="stored sha256")]
    if is_gz and m.gzip_problem is not None:
        mine.append(failed("integrity.size_limit" if m.over_limit else "integrity.gzip", rel, m.gzip_problem,
                           recorded=entry["content_sha256"]))
    elif is_gz:
        mine.append(check_equal("integrity.content_sha256", rel, entry["content_sha256"], m.content_sha256,
                                what="decompressed sha256"))
        mine.append(check_equal("integrity.content_size_bytes", rel, entry["content_size_bytes"], m.content_size,
                                what="decompressed size"))
    out.results.extend(mine)
    if any(r.status is Status.FAIL for r in mine):
        return  # never hand unverified bytes to a check
    out.entries[rel] = entry
    if m.content is not None:
        out.content[rel] = m.content
    else:
        out.content[rel] = None
        out.expected[rel] = (m.content_sha256, m.content_size)


def _attribute_plain_mismatches(out: ArchiveFiles, ambiguous: list[tuple[dict, safeio.Member]]) -> None:
    """A plain file whose sha256 alone disagrees: the manifest is blamed when a verified record holds
    the file's actual sha256 and none holds the manifest's value; otherwise the file is."""
    if not ambiguous:
        return
    texts = [data for rel, data in out.content.items() if data is not None and is_json_record(rel)]
    for entry, m in ambiguous:
        rel = entry["path"]
        actual_elsewhere = any(m.stored_sha256.encode() in t for t in texts)
        recorded_elsewhere = any(entry["sha256"].encode() in t for t in texts)
        if actual_elsewhere and not recorded_elsewhere:
            out.results.append(_manifest_blame(rel, f"its sha256 reads {entry['sha256']} but the file hashes to "
                                               f"{m.stored_sha256}, the value another verified record of the run "
                                               "holds for it", recorded=entry["sha256"], recomputed=m.stored_sha256))
        else:
            out.results.append(check_equal("integrity.sha256", rel, entry["sha256"], m.stored_sha256,
                                           what="stored sha256 (the file's bytes changed)"))
