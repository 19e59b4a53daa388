"""An archive made with the CUDA kernel tool carries the kernel source its jobs compiled (``fused_cuda.cu.gz``,
listed in the manifest); the verifier hashes it against the records' ``kernel_source_sha256`` and checks the
launch against the layout block the source declares (``// rev88-layout: {...}``).

No GPU makes a new archive here: each test takes a hard-linked copy of evidence/h200-fused-cuda-20261205 (made
with 9da9db69…, bundle/fused_cuda.cu before it declared its layout) and, as a writer would have, stores a kernel
source in it and renames the source sha256 in every record that names it, cascading every recorded sha256 and
size of a rewritten file, then rebuilds the manifest. The current bundle/fused_cuda.cu differs from 9da9db69… in
comments only, so the copy is the archive that source would have made.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from bundle import archive
from bundle.phases.fixture_runner import CUDA_KERNEL_SOURCE, KERNEL_SOURCE_REL, store_kernel_source
from protocol.errors import BundleError
from tests.conftest import REPO_ROOT, check_statuses, linked_copy
from verify.checks import run_energy
from verify.checks.run_energy import LAYOUT_MARK, LayoutError, parse_layout

ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-cuda-20261205"
RAN = "9da9db69e68ac4f874179804bb4c492737a753d506dbd1a65cd0a8c9deda1f4a"   # the source the archive's records name
CURRENT = CUDA_KERNEL_SOURCE.read_bytes()
pytestmark = pytest.mark.skipif(not ARCHIVE.is_dir(), reason="the shipped fused archive is absent")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _sizes_fixed(obj, sizes: dict[str, int]) -> None:
    """Every ``{sha256: …, size_bytes: …}`` / ``{content_sha256: …, content_size_bytes: …}`` pair of *obj* set to the
    size of the file that sha256 now names."""
    if isinstance(obj, dict):
        for sha_key, size_key in (("sha256", "size_bytes"), ("content_sha256", "content_size_bytes")):
            if size_key in obj and obj.get(sha_key) in sizes:
                obj[size_key] = sizes[obj[sha_key]]
        for v in obj.values():
            _sizes_fixed(v, sizes)
    elif isinstance(obj, list):
        for v in obj:
            _sizes_fixed(v, sizes)


def _rename(root: Path, old: str, new: str) -> None:
    """Replace *old* by *new* in every JSON record of *root*, then every sha256 of a rewritten file by its new
    one (stored and content), until nothing names an old file."""
    mapping, sizes = {old: new}, {}
    while mapping:
        changed = {}
        for path in sorted(root.rglob("*.json*")):
            if path.name == "manifest.json" or not path.name.endswith((".json", ".json.gz")):
                continue
            raw = path.read_bytes()
            content = gzip.decompress(raw) if path.name.endswith(".gz") else raw
            text = content.decode()
            if not any(k in text for k in mapping):
                continue
            for k, v in mapping.items():
                text = text.replace(k, v)
            obj = json.loads(text)
            _sizes_fixed(obj, sizes)
            path.unlink()   # break the hard link
            (archive.write_json_gz if path.name.endswith(".gz") else archive.write_json)(path, obj)
            new_raw = path.read_bytes()
            new_text = gzip.decompress(new_raw) if path.name.endswith(".gz") else new_raw
            changed[_sha(raw)], changed[_sha(content)] = _sha(new_raw), _sha(new_text)
            sizes[_sha(new_raw)], sizes[_sha(new_text)] = len(new_raw), len(new_text)
        mapping = changed


def _copy(tmp_path: Path, source: bytes | None, records_name: str | None) -> Path:
    """A copy of :data:`ARCHIVE` whose records name *records_name* (None: as shipped) and which carries *source*
    (None: no source file)."""
    root = linked_copy(ARCHIVE, tmp_path)
    if records_name is not None:
        _rename(root, RAN, records_name)
    if source is not None:
        archive.write_bytes_gz(root / KERNEL_SOURCE_REL, source)
    (root / "manifest.json").unlink()
    archive.RunArchive(root).write_manifest()
    return root


def _with_layout(**edit) -> bytes:
    """The current source with its layout block edited (a comment line: the kernel code is the same)."""
    text = CURRENT.decode()
    line = next(x for x in text.splitlines() if x.startswith(LAYOUT_MARK))
    block = {**json.loads(line[len(LAYOUT_MARK):]), **edit}
    return text.replace(line, LAYOUT_MARK + json.dumps(block)).encode()


def test_a_copy_with_its_source_verifies_and_the_layout_comes_from_the_source(tmp_path: Path) -> None:
    root = _copy(tmp_path, CURRENT, _sha(CURRENT))
    statuses = check_statuses(root)
    assert not [c for c, s in statuses.items() if "FAIL" in s], [c for c, s in statuses.items() if "FAIL" in s]
    for check in ("energy.learners.kernel_source", "energy.learners.cuda_shape", "profile.cuda_launch",
                  "energy.learners.kernel_source_sha256", "integrity.sha256"):
        assert statuses.get(check) == {"PASS"}, (check, statuses.get(check))
    assert _sha(CURRENT) not in run_energy.LEGACY_LAYOUTS   # nothing but the archived source gave the layout


def test_a_source_whose_sha256_is_not_the_records_fails(tmp_path: Path) -> None:
    """The archive as shipped (records name 9da9db69…) with the current source beside it, which hashes otherwise."""
    statuses = check_statuses(_copy(tmp_path, CURRENT, None))
    assert statuses.get("energy.learners.kernel_source") == {"FAIL"}


@pytest.mark.parametrize(("edit", "check"), [
    ({"shared": {"partial_floats": 7556, "rows16": False}}, "profile.cuda_launch"),   # 164,608 B; the CSV: 147,072
    ({"threads": {"unit": 32, "least": 13, "most": 16}}, "energy.learners.cuda_shape"),   # 12 warps ran
    ({"cluster_split": False}, "energy.learners.cuda_shape"),                             # the records split
])
def test_a_layout_block_that_contradicts_the_launch_fails(tmp_path: Path, edit: dict, check: str) -> None:
    source = _with_layout(**edit)
    statuses = check_statuses(_copy(tmp_path, source, _sha(source)))
    assert statuses.get("energy.learners.kernel_source") == {"PASS"}   # the source is the one the records name
    assert "FAIL" in statuses.get(check, set()), (check, statuses.get(check))


def test_a_cuda_archive_without_its_source_fails_unless_legacy(tmp_path: Path) -> None:
    """Records naming a source that is not one of the two legacy ones, and no source: FAIL (deleting the source
    must not turn the layout checks into UNAVAILABLE). The shipped archive itself: UNAVAILABLE (legacy)."""
    statuses = check_statuses(_copy(tmp_path, None, _sha(CURRENT)))
    assert statuses.get("energy.learners.kernel_source") == {"FAIL"}


@pytest.mark.parametrize(("text", "word"), [
    ("// no block\n", "not one"),
    (f"{LAYOUT_MARK}{{}}\n{LAYOUT_MARK}{{}}\n", "not one"),
    (f"{LAYOUT_MARK}{{threads: 1}}\n", "not JSON"),
    (f'{LAYOUT_MARK}{{"threads": {{"unit": 32, "least": 5, "most": 16}}}}\n', "exactly"),
])
def test_a_malformed_layout_block_is_refused(text: str, word: str) -> None:
    with pytest.raises(LayoutError, match=word):
        parse_layout(text)


@pytest.mark.parametrize("edit", [
    {"threads": {"unit": 32, "least": 16, "most": 5}}, {"threads": {"unit": 0, "least": 1, "most": 2}},
    {"threads": [32, 5, 16]}, {"cluster": 1}, {"cluster": False}, {"push": "yes"},
    {"shared": {"partial_floats": 100, "rows16": True}}, {"shared": {"partial_floats": 7556}},
    {"shared": {"partial_floats": 7556.0, "rows16": True}}])
def test_a_layout_block_of_another_form_is_refused(edit: dict) -> None:
    with pytest.raises(LayoutError):
        parse_layout(_with_layout(**edit).decode())


def test_a_malformed_block_in_the_archive_fails_the_source_check(tmp_path: Path) -> None:
    source = CURRENT.replace(LAYOUT_MARK.encode(), b"// rev88-layout removed: ")
    statuses = check_statuses(_copy(tmp_path, source, _sha(source)))
    assert statuses.get("energy.learners.kernel_source") == {"FAIL"}


# --- the writer ------------------------------------------------------------------------------------------------

def _stage(tmp_path: Path, blocks: list) -> tuple[Path, Path]:
    run_dir = tmp_path / "run"
    stage = run_dir / ".staging" / "qualify"
    stage.mkdir(parents=True)
    for i, block in enumerate(blocks):
        archive.write_json_gz(stage / f"draw-{i:02d}.json.gz", {"fixture": {"learner": block}})
    archive.write_json_gz(stage / "accuracy.json.gz", {"correct": 1})
    return run_dir, stage


def test_the_writer_keeps_the_source_its_cuda_records_name(tmp_path: Path) -> None:
    block = {"name": "rev88-fused", "kernel_tool": "cuda", "kernel_source_sha256": _sha(CURRENT)}
    run_dir, stage = _stage(tmp_path, [block, block])
    path = store_kernel_source(run_dir, stage)
    assert path == run_dir / KERNEL_SOURCE_REL and gzip.decompress(path.read_bytes()) == CURRENT
    assert path.read_bytes() == archive.gzip_bytes(CURRENT)   # the archive's one canonical gzip form
    assert store_kernel_source(run_dir, stage) == path          # a second phase of the same source: kept
    assert KERNEL_SOURCE_REL in {e["path"] for e in archive.RunArchive(run_dir).manifest_entries()}


@pytest.mark.parametrize("blocks", [[], [None], [{"name": "rev88-fused", "kernel_tool": "triton"}]])
def test_the_writer_keeps_no_source_without_a_cuda_record(tmp_path: Path, blocks: list) -> None:
    run_dir, stage = _stage(tmp_path, blocks)
    assert store_kernel_source(run_dir, stage) is None and not (run_dir / KERNEL_SOURCE_REL).exists()


def test_the_writer_refuses_records_of_another_source_and_a_second_source(tmp_path: Path) -> None:
    run_dir, stage = _stage(tmp_path, [{"name": "rev88-fused", "kernel_tool": "cuda", "kernel_source_sha256": RAN}])
    with pytest.raises(BundleError, match="run the phase from the checkout") as info:
        store_kernel_source(run_dir, stage)
    assert "\n" not in str(info.value) and not (run_dir / KERNEL_SOURCE_REL).exists()
    other = tmp_path / "other.cu"
    other.write_bytes(CURRENT + b"// another\n")
    archive.write_bytes_gz(run_dir / KERNEL_SOURCE_REL, other.read_bytes())
    (stage / "draw-00.json.gz").unlink()
    archive.write_json_gz(stage / "draw-00.json.gz", {"fixture": {"learner": {
        "name": "rev88-fused", "kernel_tool": "cuda", "kernel_source_sha256": _sha(CURRENT)}}})
    with pytest.raises(BundleError, match="holds one kernel source"):
        store_kernel_source(run_dir, stage)


def test_the_report_describes_the_layout_the_verifier_read() -> None:
    """The report's words for the launch layout: from the verified source's block, else from the legacy entry,
    else that it does not know (never a layout from a verdict that did not PASS)."""
    from verify.report import _cuda_layout_text  # noqa: PLC0415
    from verify.result import VerifyReport, failed, passed  # noqa: PLC0415

    declared = {**parse_layout(CURRENT.decode()), "threads": {"unit": 32, "least": 6, "most": 12}}
    verified = VerifyReport("a", "run", [passed("energy.learners.kernel_source", KERNEL_SOURCE_REL,
                                                recomputed=declared)])
    text = _cuda_layout_text(verified, _sha(CURRENT))
    assert "carries declares" in text and "32 x 6 to 12 threads" in text and "7,556 floats apart" in text
    refused = VerifyReport("a", "run", [failed("energy.learners.kernel_source", KERNEL_SOURCE_REL, "x",
                                               recomputed=declared)])
    assert "does not know" in _cuda_layout_text(refused, _sha(CURRENT))
    legacy = _cuda_layout_text(VerifyReport("a", "run"), RAN)
    assert "legacy entry" in legacy and "pushed exchange" in legacy and "16-row arrays" in legacy
