"""Leaf coverage of `rev88 verify`: change every leaf of every record, count what the checks catch.

For each record kind of an archive (ours: every ``.json``/``.json.gz`` member, the manifest
included; the original layout: its 46 JSON files) every leaf is changed in turn — a number
(an integer by +1, a float by 1 %), a string (its last character), a boolean (flipped), null
(to 0), a list (its last item dropped; an empty one gets an item), an empty object (gets a
key) — in one record of the kind (the leaves of a kind rotate over its records). The archive is
then rebuilt consistently, as a forger would: the changed record is re-serialised the way its
writer writes it, every sha256 and size of a changed file recorded anywhere (the manifest,
``record_sha256`` fields, ``files`` maps, the original's internal sha chains) is replaced by
the new one, cascading, and the bundle's own pins are taken as re-pinned. The checks then run
in-process (``verify.registry``'s families; for the original also its sha chains) and the
leaf counts as

* **detected** when any check FAILs,
* **attested** when it is not detected but :data:`verify.coverage.ATTESTATIONS` lists it,
* **missed** otherwise.

Usage::

    .venv/bin/python scripts/leaf_coverage.py                      # both shipped archives
    .venv/bin/python scripts/leaf_coverage.py evidence/h200-20261202 --kinds 'energy/*' --missed
    .venv/bin/python scripts/leaf_coverage.py --sample 5 --json out.json

Only families that read a changed file are re-run (the others' verdicts cannot change);
``.ncu-rep`` reads are done once and reused (the reports are raw sources and never changed).
"""

from __future__ import annotations

import argparse
import copy
import fnmatch
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bundle import archive  # noqa: E402
from verify import coverage  # noqa: E402
from verify.integrity import MANIFEST_NAME, ArchiveFiles, verify_run_archive  # noqa: E402
from verify.original_layout import check_sha_chains, is_original_archive, verify_original_archive  # noqa: E402
from verify.records import RecordError, parse_json  # noqa: E402
from verify.registry import original_families, run_families  # noqa: E402
from verify.result import CheckResult, Status  # noqa: E402

try:  # the frozen reference is re-verified when its folder's listing changes; it never does here
    import functools

    from verify import host as _host  # noqa: E402

    _host._signature = functools.lru_cache(maxsize=None)(_host._signature)
except ImportError:  # pragma: no cover - older verifier without verify.host
    pass

DEFAULT_ARCHIVES = (REPO / "evidence" / "h200-20261202", REPO / "evidence" / "rev88-original")
HEX = set("0123456789abcdef")


class _Files(ArchiveFiles):
    """ArchiveFiles over in-memory content with a parse cache and a read log."""

    def __init__(self, root: Path, content: dict[str, bytes], entries: dict[str, dict], parsed: dict[str, Any],
                 background: object = None) -> None:
        super().__init__(root=root, content=content, entries=entries, background=background)
        self._parsed = parsed
        self.reads: set[str] = set()

    def read(self, path: str) -> bytes:
        if path not in self.content:
            raise RecordError(f"file is not a verified member of the archive ({self.root / path}): check the manifest")
        self.reads.add(path)
        return self.content[path]  # type: ignore[return-value]

    def json(self, path: str) -> object:
        self.reads.add(path)
        if path not in self._parsed:
            self._parsed[path] = parse_json(self.read(path), path)
        return self._parsed[path]


class _CachedReports:
    """The ``.ncu-rep`` reads of the unchanged archive, replayed for every mutation."""

    def __init__(self, results: dict[str, Any]) -> None:
        self.results = results
        self.read_s = 0.0
        self.wait_s = 0.0

    def result(self, record: str) -> Any:
        return self.results.get(record)

    def close(self) -> None:
        return None


@dataclass
class Mutation:
    """One changed leaf."""

    rel: str
    leaf: str
    what: str
    outcome: str = ""
    checks: list[str] = field(default_factory=list)
    reason: str = ""


def is_record(rel: str) -> bool:
    """JSON records the tool mutates (the NVML logs, CSVs and text are raw sources)."""
    return rel.endswith(".json") or rel.endswith(".json.gz")


def mutate_value(value: Any) -> tuple[Any, str]:
    """The changed value of one leaf and a word for the change."""
    if isinstance(value, bool):
        return (not value), "flipped"
    if isinstance(value, int):
        return value + 1, "+1"
    if isinstance(value, float):
        return (value * 1.01 if value else 1e-3), "x1.01"
    if isinstance(value, str):
        if not value:
            return "x", "set"
        last = value[-1]
        repl = ("1" if last == "0" else "0") if last in HEX or last.isdigit() else ("b" if last != "b" else "c")
        return value[:-1] + repl, "last char"
    if value is None:
        return 0, "null->0"
    if isinstance(value, list):
        return ([0] if not value else value[:-1]), ("grown" if not value else "shortened")
    if isinstance(value, dict):
        return {"x": 0}, "key added"
    raise TypeError(type(value))


def _set(obj: Any, parts: list[str], value: Any) -> None:
    cur = obj
    for p in parts[:-1]:
        cur = cur[int(p)] if isinstance(cur, list) else cur[p]
    last = parts[-1]
    if isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value


def _split(leaf: str, obj: Any) -> list[str]:
    """Key path of a dotted leaf, honouring keys that contain dots (``fixture.py``)."""
    parts: list[str] = []
    rest = leaf
    cur = obj
    while rest:
        if isinstance(cur, list):
            head, _, rest = rest.partition(".")
            parts.append(head)
            cur = cur[int(head)]
            continue
        for key in sorted(cur, key=len, reverse=True):
            if rest == key or rest.startswith(key + "."):
                parts.append(key)
                cur = cur[key]
                rest = rest[len(key) + 1:]
                break
        else:
            raise KeyError(leaf)
    return parts


def mutation_points(obj: Any) -> list[str]:
    """Dotted paths of every leaf and of every non-empty list (list-length changes)."""
    out = [p for p, _ in coverage.leaves(obj)]
    out += [p for p in _lists(obj, "") if p]
    return out


def _lists(obj: Any, prefix: str) -> Iterable[str]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _lists(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(obj, list):
        if obj:
            yield prefix + "[]"
        for i, v in enumerate(obj):
            yield from _lists(v, f"{prefix}.{i}" if prefix else str(i))



def _link_or_copy(src: str, dst: str) -> None:
    """Hard link *src* to *dst*, or copy it where they are on different file systems."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)

class Harness:
    """One archive, verified once, then mutated leaf by leaf in memory.

    Args:
        root: the archive folder (ours with manifest.json, or the original layout).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.layout = coverage.RUN if (self.root / MANIFEST_NAME).exists() else coverage.ORIGINAL
        if self.layout == coverage.ORIGINAL and not is_original_archive(self.root):
            raise SystemExit(f"{root}: neither layout")
        base = verify_run_archive(self.root) if self.layout == coverage.RUN else verify_original_archive(self.root)
        if not base.ok:
            raise SystemExit(f"{root}: integrity fails before any change; fix the archive first")
        self.content = {p: base.read(p) for p in base.content}
        self.entries = dict(base.entries)
        self.families = list(run_families() if self.layout == coverage.RUN else original_families())
        self.background = None
        if self.layout == coverage.RUN:
            from verify.ncu_reports import ReportReads

            reads = ReportReads(base)
            try:
                self.background = _CachedReports({rec: reads.result(rec) for rec in reads.reports})
            finally:
                reads.close()
        self.parsed: dict[str, Any] = {}
        self.records = sorted(p for p in self.content if is_record(p))
        for rel in self.records:
            self.parsed[rel] = parse_json(self.content[rel], rel)
        self.sha_index = self._index_hashes()
        self.baseline: dict[str, list[CheckResult]] = {}
        self.family_reads: dict[str, set[str]] = {}
        files = self._files(self.content, self.entries, dict(self.parsed))
        for name, fam in self.families:
            files.reads = set()
            files.shared.clear()  # a value another family derived and cached would hide this family's reads
            self.baseline[name] = _run(fam, files, name)
            self.family_reads[name] = set(files.reads)
        if self.layout == coverage.ORIGINAL:
            self.family_reads["original.integrity.sha_chain"] = set(self.records)
        self.baseline_fails = [r for rs in self.baseline.values() for r in rs if r.status is Status.FAIL]
        self.manifest = None
        self._linked: Path | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None
        if self.layout == coverage.RUN:
            self.manifest = json.loads((self.root / MANIFEST_NAME).read_bytes())

    # ------------------------------------------------------------------------------------
    def _files(self, content: dict, entries: dict, parsed: dict, root: Path | None = None) -> _Files:
        return _Files(root or self.root, content, entries, parsed, self.background)

    def _index_hashes(self) -> dict[str, list[tuple[str, str]]]:
        index: dict[str, list[tuple[str, str]]] = {}
        for rel in self.records:
            for path, value in coverage.leaves(self.parsed[rel]):
                if isinstance(value, str) and len(value) == 64 and set(value) <= HEX:
                    index.setdefault(value, []).append((rel, path))
        return index

    def serialise(self, rel: str, obj: Any) -> bytes:
        """The record's bytes as its writer writes them (content; decompressed for .gz)."""
        return archive.dumps_canonical(obj).encode("ascii")

    def stored(self, rel: str, content: bytes) -> bytes:
        """Stored bytes of a member from its content."""
        return archive.gzip_bytes(content) if rel.endswith(".gz") else content

    def rebuild(self, changed: dict[str, Any]) -> tuple[dict[str, bytes], dict[str, dict], dict[str, Any]]:
        """Consistent archive after ``changed`` (rel -> new parsed record): hashes propagated, cascading."""
        parsed = dict(self.parsed)
        content = dict(self.content)
        entries = dict(self.entries)
        queue = list(changed)
        for rel, obj in changed.items():
            parsed[rel] = obj
        done_rounds = 0
        while queue and done_rounds < 50:
            done_rounds += 1
            rel = queue.pop(0)
            old_content = content[rel]
            new_content = self.serialise(rel, parsed[rel])
            content[rel] = new_content
            old_stored = self.stored(rel, self.content[rel]) if rel.endswith(".gz") else self.content[rel]
            if rel.endswith(".gz") and rel in self.entries:
                old_stored_sha = self.entries[rel]["sha256"]
                old_stored_size = self.entries[rel]["size_bytes"]
            else:
                old_stored_sha = hashlib.sha256(old_stored).hexdigest()
                old_stored_size = len(old_stored)
            new_stored = self.stored(rel, new_content)
            repl = {old_stored_sha: hashlib.sha256(new_stored).hexdigest()}
            sizes = {old_stored_size: len(new_stored)}
            if rel.endswith(".gz"):
                repl[hashlib.sha256(old_content).hexdigest()] = hashlib.sha256(new_content).hexdigest()
                sizes[len(old_content)] = len(new_content)
            if rel in entries:
                entries[rel] = {**entries[rel], "size_bytes": len(new_stored), "sha256": repl[old_stored_sha]}
                if rel.endswith(".gz"):
                    entries[rel]["content_sha256"] = hashlib.sha256(new_content).hexdigest()
                    entries[rel]["content_size_bytes"] = len(new_content)
            for old_sha, new_sha in repl.items():
                for other, path in self.sha_index.get(old_sha, []):
                    if other == rel:
                        continue
                    obj = parsed[other]
                    if obj is self.parsed[other]:
                        obj = parsed[other] = copy.deepcopy(obj)
                    try:
                        parts = _split(path, obj)
                    except (KeyError, IndexError, ValueError):
                        continue
                    _set(obj, parts, new_sha)
                    _fix_sizes(obj, parts, sizes)
                    if other not in queue:
                        queue.append(other)
        return content, entries, parsed

    def evaluate(self, changed: dict[str, Any], root: Path | None = None,
                 extra: Callable[[], list[CheckResult]] | None = None) -> list[CheckResult]:
        """FAIL verdicts of the families that read a changed file, after a consistent rebuild."""
        content, entries, parsed = self.rebuild(changed)
        touched = {rel for rel in content if content[rel] is not self.content[rel]}
        files = self._files(content, entries, parsed, root)
        fails: list[CheckResult] = []
        for name, fam in self.families:
            if root is None and not (self.family_reads[name] & touched):
                continue
            files.reads = set()
            fails += [r for r in _run(fam, files, name) if r.status is Status.FAIL]
        if self.layout == coverage.RUN and "environment.json.gz" in touched:
            from verify import integrity  # noqa: PLC0415

            check_run_id = getattr(integrity, "_check_environment_run_id", None)  # record-level part of integrity
            if check_run_id is not None:
                files.json_checked = set(content)
                fails += [r for r in check_run_id(files, self.manifest["run_id"]) if r.status is Status.FAIL]
        if self.layout == coverage.ORIGINAL and touched:
            raw = {rel: content[rel] for rel in self.records}
            chain, _ = check_sha_chains(raw, parsed)
            fails += [r for r in chain if r.status is Status.FAIL]
        if extra is not None:
            fails += [r for r in extra() if r.status is Status.FAIL]
        return fails

    # ------------------------------------------------------------------------------------
    def kinds(self) -> dict[str, list[str]]:
        """Record kind -> its records."""
        out: dict[str, list[str]] = {}
        for rel in self.records:
            out.setdefault(coverage.record_kind(rel), []).append(rel)
        if self.layout == coverage.RUN:
            out[MANIFEST_NAME] = [MANIFEST_NAME]
        return out

    def points(self, kind: str, records: list[str]) -> list[tuple[str, str]]:
        """(record, mutation point) pairs of a kind, rotating over its records."""
        by_point: dict[str, list[str]] = {}
        for rel in records:
            obj = self.manifest if rel == MANIFEST_NAME else self.parsed[rel]
            for point in mutation_points(obj):
                by_point.setdefault(point, []).append(rel)
        return [(rels[i % len(rels)], point) for i, (point, rels) in enumerate(by_point.items())]

    def mutate(self, rel: str, point: str) -> Mutation:
        """Apply one mutation and classify it."""
        base = self.manifest if rel == MANIFEST_NAME else self.parsed[rel]
        obj = copy.deepcopy(base)
        leaf = point[:-2] if point.endswith("[]") else point
        parts = _split(leaf, obj) if leaf else []
        current = obj
        for p in parts:
            current = current[int(p)] if isinstance(current, list) else current[p]
        new, what = mutate_value(current)
        if point.endswith("[]"):
            new, what = current[:-1], "shortened"
        if parts:
            _set(obj, parts, new)
        else:
            obj = new
        m = Mutation(rel, leaf, what)
        try:
            fails = self._manifest_fails(obj) if rel == MANIFEST_NAME else self.evaluate({rel: obj})
        except Exception as exc:  # noqa: BLE001 - a crash of a check counts as detection only if it is a FAIL
            fails = []
            m.reason = f"tool error {type(exc).__name__}: {exc}"
        if fails:
            m.outcome = "detected"
            m.checks = sorted({r.check_id for r in fails})
            m.reason = fails[0].reason[:160]
        elif coverage.attestation_for(self.layout, rel, leaf) is not None:
            m.outcome = "attested"
            m.reason = coverage.attestation_for(self.layout, rel, leaf).reason  # type: ignore[union-attr]
        else:
            m.outcome = "missed"
        return m

    def _manifest_fails(self, manifest: Any) -> list[CheckResult]:
        """Integrity of a hard-linked copy of the archive under the changed manifest, then the families."""
        if self._linked is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="rev88-cov-")
            self._linked = Path(self._tmp.name) / self.root.name
            shutil.copytree(self.root, self._linked, copy_function=_link_or_copy)
        path = self._linked / MANIFEST_NAME
        path.unlink()
        path.write_text(archive.dumps_canonical(manifest), encoding="ascii")
        base = verify_run_archive(self._linked)
        fails = [r for r in base.results if r.status is Status.FAIL]
        return fails or self.evaluate({}, root=self._linked)  # the families run only on an archive that passed


def _fix_sizes(obj: Any, parts: list[str], sizes: dict[int, int]) -> None:
    """After a sha256 in ``obj`` at ``parts`` changed, fix its sibling ``*size_bytes`` fields."""
    cur = obj
    for p in parts[:-1]:
        cur = cur[int(p)] if isinstance(cur, list) else cur[p]
    if isinstance(cur, dict):
        for key, value in list(cur.items()):
            if key.endswith("bytes") and isinstance(value, int) and not isinstance(value, bool) and value in sizes:
                cur[key] = sizes[value]


def _run(family: Callable[[ArchiveFiles], list[CheckResult]], files: ArchiveFiles, name: str) -> list[CheckResult]:
    try:
        return list(family(files))
    except Exception as exc:  # noqa: BLE001 - as verify.registry.run_checks
        return [CheckResult(f"{name}.error", str(files.root.name), Status.FAIL, reason=f"{type(exc).__name__}: {exc}")]


_WORKER: Harness | None = None


def _work(item: tuple[str, str]) -> Mutation:
    assert _WORKER is not None
    return _WORKER.mutate(*item)


def _map(h: Harness, points: list[tuple[str, str]], jobs: int) -> list[Mutation]:
    """Mutations of ``points`` in order, in ``jobs`` forked workers that share the verified harness."""
    global _WORKER
    if jobs <= 1 or len(points) < 8 or MANIFEST_NAME in {p[0] for p in points}:
        return [h.mutate(rel, point) for rel, point in points]
    import multiprocessing  # noqa: PLC0415

    _WORKER = h
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        return pool.map(_work, points, chunksize=max(1, len(points) // (4 * jobs)))


def run_coverage(root: Path, *, kinds: str = "*", sample: int | None = None, seed: int = 0, jobs: int = 1,
                 progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Coverage of one archive.

    Args:
        root: the archive folder.
        kinds: glob over record kinds to include.
        sample: at most this many mutation points per kind (deterministic random sample), or all.
        seed: the sample's seed.
        jobs: forked worker processes (1: in this process).
        progress: called with a line per finished kind.

    Returns:
        ``{"archive", "layout", "kinds": {kind: {"detected", "attested", "missed", "records"}},
        "mutations": [Mutation as dict], "seconds"}``.
    """
    t0 = time.perf_counter()
    h = Harness(root)
    rng = random.Random(seed)
    out: dict[str, Any] = {"archive": str(root), "layout": h.layout, "kinds": {}, "mutations": [],
                           "baseline_fails": [r.check_id for r in h.baseline_fails]}
    for kind, records in sorted(h.kinds().items()):
        if not fnmatch.fnmatchcase(kind, kinds):
            continue
        points = h.points(kind, records)
        if sample is not None and len(points) > sample:
            points = sorted(rng.sample(points, sample), key=points.index)
        counts = {"detected": 0, "attested": 0, "missed": 0, "records": len(records), "leaves": len(points)}
        for m in _map(h, points, jobs):
            counts[m.outcome] += 1
            out["mutations"].append(m.__dict__)
        out["kinds"][kind] = counts
        if progress is not None:
            progress(f"{kind}: {counts}")
    out["seconds"] = time.perf_counter() - t0
    return out


def table(result: dict[str, Any]) -> list[str]:
    """The per-kind table of one archive as text lines."""
    rows = [(k, v["records"], v["leaves"], v["detected"], v["attested"], v["missed"]) for k, v in result["kinds"].items()]
    width = max([len("record kind")] + [len(r[0]) for r in rows])
    lines = [f"{result['archive']} ({result['layout']} layout)",
             f"  {'record kind':<{width}}  records  changes  detected  attested  missed"]
    for r in rows:
        lines.append(f"  {r[0]:<{width}}  {r[1]:>7}  {r[2]:>7}  {r[3]:>8}  {r[4]:>8}  {r[5]:>6}")
    tot = [sum(r[i] for r in rows) for i in range(1, 6)]
    lines.append(f"  {'total':<{width}}  {tot[0]:>7}  {tot[1]:>7}  {tot[2]:>8}  {tot[3]:>8}  {tot[4]:>6}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command line: print one table per archive; exit 1 when a leaf is missed."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("archives", nargs="*", type=Path, default=list(DEFAULT_ARCHIVES))
    ap.add_argument("--kinds", default="*", help="glob over record kinds (e.g. 'energy/*')")
    ap.add_argument("--sample", type=int, default=None, help="at most N changes per kind")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (fork)")
    ap.add_argument("--missed", action="store_true", help="list every missed leaf")
    ap.add_argument("--json", type=Path, default=None, help="write every mutation and its outcome here")
    args = ap.parse_args(argv)
    results = []
    missed = 0
    for root in args.archives:
        res = run_coverage(root, kinds=args.kinds, sample=args.sample, seed=args.seed, jobs=args.jobs,
                           progress=lambda line: print("  ..", line, file=sys.stderr, flush=True))
        results.append(res)
        print("\n".join(table(res)))
        print(f"  ({res['seconds']:.0f} s)")
        if args.missed:
            for m in res["mutations"]:
                if m["outcome"] == "missed":
                    print(f"    MISSED {m['rel']} :: {m['leaf']} ({m['what']}) {m['reason']}")
        missed += sum(v["missed"] for v in res["kinds"].values())
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())

