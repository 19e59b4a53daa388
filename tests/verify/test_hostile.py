"""Issue 11: encodings and hostile files, strict ncu parsing, and the host's reference data.

Every defect class gets a real input built from the shipped H200 archive: a hard-linked copy
in ``tmp_path`` (a changed file is unlinked first, so the shipped bytes are never touched),
one mutation, the manifest rebuilt consistently where the writer can (``RunArchive.write_manifest``)
or patched entry by entry where it refuses the bytes, then the real ``rev88 verify`` command:
in process through typer's runner with ``--json`` (``ncu_report`` hidden so each run stays a
few seconds), or as a subprocess with a timeout where a hang or the environment is the point.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bundle import archive, fixture
from bundle import profile as p
from bundle.cli import app
from protocol.errors import BundleError
from tests.conftest import H200_ARCHIVE, ORIGINAL_ARCHIVE, RECORDED, REPO_ROOT, SHARED_MNIST, linked_copy
from verify import safeio
from verify.checks.consistency import WORKSPACE_RE
from verify.records import MAX_JSON_DEPTH, RecordError, parse_json

REAL = H200_ARCHIVE
pytestmark = [pytest.mark.skipif(not REAL.is_dir(), reason="the shipped H200 archive is absent"),
              pytest.mark.usefixtures("hidden_ncu_report")]
RECORD = "qualify/accuracy.json.gz"



def _copy(tmp_path: Path, name: str = REAL.name) -> Path:
    return linked_copy(REAL, tmp_path, name)


def _replace(root: Path, rel: str, blob: bytes) -> None:
    (root / rel).unlink()  # break the hard link: the shipped file keeps its bytes
    (root / rel).write_bytes(blob)


def _rebuild(root: Path) -> None:
    (root / "manifest.json").unlink()
    archive.RunArchive(root).write_manifest()


def _relist(root: Path, rel: str, content: bytes | None) -> None:
    """Patch one manifest entry to the stored bytes (and *content*) of ``rel``, canonically."""
    manifest = json.loads((root / "manifest.json").read_bytes())
    blob = (root / rel).read_bytes()
    for entry in manifest["files"]:
        if entry["path"] == rel:
            entry.update(size_bytes=len(blob), sha256=hashlib.sha256(blob).hexdigest())
            if content is not None:
                entry.update(content_sha256=hashlib.sha256(content).hexdigest(), content_size_bytes=len(content))
    (root / "manifest.json").unlink()
    archive.write_json(root / "manifest.json", manifest)


def _verify(*paths: Path) -> tuple[int, dict, str]:
    res = CliRunner().invoke(app, ["verify", *map(str, paths), "--json"])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception  # no traceback
    return res.exit_code, json.loads(res.output) if res.output.lstrip().startswith("{") else {}, res.output


def _fails(root: Path) -> list[dict]:
    code, doc, output = _verify(root)
    assert code == 1, output
    return [r for r in doc["archives"][0]["results"] if r["status"] == "FAIL"]


def _one_fail(root: Path, check_id: str, subject: str, needle: str) -> dict:
    fails = _fails(root)
    assert [(r["check_id"], r["subject"]) for r in fails] == [(check_id, subject)], fails
    assert needle in fails[0]["reason"] and "\n" not in fails[0]["reason"], fails[0]["reason"]
    return fails[0]


def _content(rel: str) -> bytes:
    return gzip.decompress((REAL / rel).read_bytes())


# --- 4. canonical bytes -----------------------------------------------------------------------
def test_every_shipped_member_is_already_in_the_writers_canonical_form():
    """Canonical = what bundle.archive writes: each shipped record re-serialises to its bytes."""
    manifest = (REAL / "manifest.json").read_bytes()
    assert archive.dumps_canonical(json.loads(manifest)).encode() == manifest
    for path in sorted(REAL.rglob("*")):
        rel = path.relative_to(REAL).as_posix()
        if rel.endswith(".gz"):
            blob = path.read_bytes()
            assert blob[:10] == archive.GZIP_HEADER, rel
            member = safeio.read_member(path, gz=True, content_limit=1 << 30, keep=1 << 30, where=rel)
            assert member.gzip_problem is None, rel
        if rel.endswith((".json", ".json.gz")) and rel != "manifest.json":
            text = gzip.decompress(path.read_bytes()) if rel.endswith(".gz") else path.read_bytes()
            assert archive.dumps_canonical(parse_json(text, rel)).encode() == text, rel
    assert archive.gzip_bytes(b"x")[:10] == archive.GZIP_HEADER


def test_duplicate_json_key_is_refused(tmp_path):
    root = _copy(tmp_path)
    text = _content(RECORD).decode()
    line = next(ln for ln in text.splitlines() if ln.startswith('  "correct": '))
    _replace(root, RECORD, archive.gzip_bytes(text.replace(line, line + "\n" + line, 1).encode()))
    _rebuild(root)
    _one_fail(root, "integrity.json", RECORD, "duplicate key")


def test_non_canonical_json_is_refused(tmp_path):
    root = _copy(tmp_path)
    text = json.dumps(json.loads(_content(RECORD)), indent=1) + "\n"  # same values, other whitespace
    _replace(root, RECORD, archive.gzip_bytes(text.encode()))
    _rebuild(root)
    _one_fail(root, "integrity.canonical_json", RECORD, "not the writer's canonical JSON")


@pytest.mark.parametrize("make,needle", [
    (lambda c: gzip.compress(c, compresslevel=9, mtime=1_700_000_000), "non-canonical gzip header"),
    (lambda c: archive.gzip_bytes(c[:100]) + archive.gzip_bytes(c[100:]), "a second gzip member"),
    (lambda c: archive.gzip_bytes(c) + b"\0" * 4, "4 trailing bytes"),
], ids=["header", "second-member", "trailing-zeros"])
def test_non_canonical_gzip_is_refused(tmp_path, make, needle):
    """Python's gzip reader accepts all three, so the writer's manifest rebuild does too."""
    root = _copy(tmp_path)
    content = _content(RECORD)
    blob = make(content)
    assert gzip.decompress(blob) == content
    _replace(root, RECORD, blob)
    _rebuild(root)
    _one_fail(root, "integrity.gzip", RECORD, needle)


def test_trailing_garbage_after_the_gzip_stream_is_refused(tmp_path):
    root = _copy(tmp_path)
    content = _content(RECORD)
    _replace(root, RECORD, archive.gzip_bytes(content) + b"junk")
    _relist(root, RECORD, content)  # the writer refuses this file, so the entry is patched
    _one_fail(root, "integrity.gzip", RECORD, "4 trailing bytes")


def test_record_over_its_size_limit_is_refused_while_decompressing(tmp_path):
    """An unknown key holding 17 MiB (the issue's was 400 MiB) in a record that stores as 17 kB."""
    root = _copy(tmp_path)
    rec = json.loads(_content(RECORD))
    rec["padding"] = "a" * (17 << 20)
    _replace(root, RECORD, archive.gzip_bytes(archive.dumps_canonical(rec).encode()))
    _rebuild(root)
    _one_fail(root, "integrity.size_limit", RECORD, "gzip content exceeds 16,777,216 bytes")


def test_plain_file_over_its_size_limit_is_refused_from_its_size(tmp_path):
    root = _copy(tmp_path)
    rel = "compare/config.json"
    _replace(root, rel, (REAL / rel).read_bytes())
    os.truncate(root / rel, 17 << 20)  # sparse: the verifier must refuse it without reading it
    _rebuild(root)
    _one_fail(root, "integrity.size_limit", rel, "more than the 16,777,216 bytes")


def test_whitespace_change_in_the_manifest_is_refused(tmp_path):
    root = _copy(tmp_path)
    manifest = json.loads((REAL / "manifest.json").read_bytes())
    _replace(root, "manifest.json", (json.dumps(manifest, indent=4) + "\n").encode())
    _one_fail(root, "integrity.manifest_canonical", "manifest.json", "not in the writer's canonical form")


def test_manifest_run_id_must_be_the_folder_name(tmp_path):
    root = _copy(tmp_path, "renamed-copy")
    _one_fail(root, "integrity.run_id", "manifest.json", "h200-20261202")


def test_environment_run_id_must_be_the_manifests(tmp_path):
    root = _copy(tmp_path)
    env = archive.read_json_gz(REAL / "environment.json.gz")
    env["run_id"] = "another-run"
    (root / "environment.json.gz").unlink()
    archive.write_json_gz(root / "environment.json.gz", env)
    _rebuild(root)
    fails = _fails(root)
    assert ("integrity.run_id", "environment.json.gz") in [(r["check_id"], r["subject"]) for r in fails]
    assert all(r["check_id"].startswith("integrity.") for r in fails)


def _set_entry(root: Path, rel: str, **fields) -> None:
    manifest = json.loads((root / "manifest.json").read_bytes())
    next(e for e in manifest["files"] if e["path"] == rel).update(fields)
    (root / "manifest.json").unlink()
    archive.write_json(root / "manifest.json", manifest)  # canonical: only the entry is wrong


def _other_hex(sha: str) -> str:
    return ("1" if sha[7] != "1" else "2").join((sha[:7], sha[8:]))


@pytest.mark.parametrize("rel,field", [
    ("energy/interleaved.json.gz", "sha256"),  # content sha256 and size still match the file
    ("energy/interleaved.json.gz", "content_sha256"),  # the stored sha256 still matches the file
    ("qualify/draw-03.predictions.npy", "sha256"),  # the file's actual sha256 is in the draw record
    ("compare/config.json", "size_bytes"),
])
def test_a_corrupted_manifest_entry_is_reported_against_the_manifest(tmp_path, rel, field):
    root = _copy(tmp_path)
    entry = next(e for e in json.loads((REAL / "manifest.json").read_bytes())["files"] if e["path"] == rel)
    _set_entry(root, rel, **{field: entry[field] + 1 if field == "size_bytes" else _other_hex(entry[field])})
    fail = _one_fail(root, "integrity.manifest_entry", "manifest.json", rel)
    assert field in fail["reason"]


def test_a_malformed_manifest_hash_is_one_manifest_line(tmp_path):
    root = _copy(tmp_path)
    _set_entry(root, RECORD, sha256="not-a-hash")
    _one_fail(root, "integrity.manifest", "manifest.json", "is not 64 lowercase hex digits")


def test_a_changed_data_file_is_still_reported_against_the_file(tmp_path):
    root = _copy(tmp_path)
    rel = "qualify/draw-03.predictions.npy"
    blob = bytearray((REAL / rel).read_bytes())
    blob[-1] ^= 1
    _replace(root, rel, bytes(blob))
    _one_fail(root, "integrity.sha256", rel, "stored sha256")


# --- 5. hostile files -------------------------------------------------------------------------
def _cli(root: Path, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bundle.cli", "verify", str(root)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("make,needle", [
    (lambda path: os.symlink("/dev/zero", path), "is a symbolic link, not a regular file"),
    (lambda path: os.mkfifo(path), "is a FIFO (named pipe), not a regular file"),
], ids=["symlink-to-dev-zero", "fifo"])
def test_manifest_that_is_not_a_regular_file_is_one_line_without_reading(tmp_path, make, needle):
    root = _copy(tmp_path)
    (root / "manifest.json").unlink()
    make(root / "manifest.json")
    res = _cli(root)  # the FIFO used to block forever, /dev/zero to read until MemoryError
    assert res.returncode == 1 and "Traceback" not in res.stdout + res.stderr, res.stderr
    fail_lines = [ln for ln in res.stdout.splitlines() if ln.lstrip().startswith("FAIL")]
    assert len(fail_lines) == 1 and "integrity.manifest" in fail_lines[0], res.stdout
    assert needle in " ".join(res.stdout.split())


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder"])
def test_listed_member_that_is_not_a_regular_file_is_never_opened(tmp_path, kind):
    root = _copy(tmp_path)
    rel = "compare/config.json"
    (root / rel).unlink()
    {"fifo": lambda q: os.mkfifo(q), "symlink": lambda q: os.symlink("/dev/zero", q),
     "folder": lambda q: q.mkdir()}[kind](root / rel)
    res = _cli(root)
    assert res.returncode == 1 and "Traceback" not in res.stdout + res.stderr, res.stderr
    fail_lines = [ln for ln in res.stdout.splitlines() if ln.lstrip().startswith("FAIL")]
    assert len(fail_lines) == 1 and rel in fail_lines[0], res.stdout


def test_json_nested_100000_deep_is_refused_before_parsing(tmp_path):
    root = _copy(tmp_path)
    _replace(root, RECORD, archive.gzip_bytes(b"[" * 100_000 + b"]" * 100_000 + b"\n"))
    _rebuild(root)
    _one_fail(root, "integrity.json", RECORD, f"nests 100000 levels deep, more than the {MAX_JSON_DEPTH}")


def test_deep_manifest_is_one_manifest_line(tmp_path):
    root = _copy(tmp_path)
    _replace(root, "manifest.json", b"[" * 100_000 + b"]" * 100_000)
    _one_fail(root, "integrity.manifest", "manifest.json", "nests 100000 levels deep")


def test_original_layout_gets_duplicate_key_and_depth_checks(tmp_path):
    """The frozen original is never rewritten; a copy with a nested or duplicated key fails in one line each."""
    copy = linked_copy(ORIGINAL_ARCHIVE, tmp_path)
    (copy / "execution.json").unlink()
    (copy / "execution.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    text = (ORIGINAL_ARCHIVE / "verification.json").read_text()
    (copy / "verification.json").unlink()
    (copy / "verification.json").write_text(text.replace("{", '{"x": 1, "x": 2, ', 1))
    code, doc, output = _verify(copy)
    assert code == 1, output
    json_fails = {(r["subject"], r["reason"].split(" (")[0]) for r in doc["archives"][0]["results"]
                  if r["status"] == "FAIL" and r["check_id"] == "original.integrity.json"}
    assert json_fails == {("execution.json", "record nests 100000 levels deep, more than the 32 evidence JSON may"),
                          ("verification.json", "record has a duplicate key")}


# --- 6. strict parsers ------------------------------------------------------------------------
H200_CSV = RECORDED / "ncu" / "h200-fixture-training-16-8.csv"


@pytest.mark.parametrize("old,new,needle", [
    ('"byte","byte","byte","byte","byte","byte","byte","byte","ns"',
     '"byte","byte","byte","Mbyte","byte","byte","byte","byte","ns"', "scaled unit 'Mbyte'"),
    ('"sector","sector","sector","sector"', '"sector","sector","sector","Msector"', "scaled unit 'Msector'"),
    ('"byte","byte","byte","byte","byte","byte","byte","byte","ns"',
     '"byte","byte","byte","byte","byte","byte","byte","byte","us"', "scaled unit 'us'"),
    ('"1,128,960"', '"1,12,8960"', "not a number as ncu prints one"),
    ('"1,128,960"', '"1,23"', "not a number as ncu prints one"),
    ('"1,128,960"', '"1.12896e6"', "not a number as ncu prints one"),
    ('"97.65"', '"1500.00"', "above the 150 % any hit rate may read"),
    ('"97.65"', '"150.01"', "above the 150 % any hit rate may read"),
])
def test_recorded_h200_csv_with_scaled_units_or_bad_numbers_is_refused(old, new, needle):
    text = H200_CSV.read_text()
    assert text.count(old) >= 1
    with pytest.raises(BundleError, match=needle) as err:
        p.parse_raw_csv(text.replace(old, new, 1))
    assert "\n" not in str(err.value)


def test_hit_rates_up_to_150_are_kept_and_thousands_groups_parse():
    # 101.26, 105.19, 109.11: printed for the fused CUDA kernel tool on H200s (105.19 was refused under the former
    # 105 % bound); 150.00 is the bound itself
    for seen in ("100.90", "101.26", "105.19", "109.11", "150.00"):
        rows = p.parse_raw_csv(H200_CSV.read_text().replace('"97.65"', f'"{seen}"', 1))
        assert rows.metrics[p.L2_HIT_RATE].value == float(seen)
    text = H200_CSV.read_text().replace('"97.65"', '"100.90"', 1)
    rows = p.parse_raw_csv(text)
    assert rows.metrics[p.L2_HIT_RATE].value == 100.90
    assert rows.metrics[p.DRAM_READ].value == 1_128_960.0
    assert p.parse_ncu_number("1,234,567") == 1_234_567.0 and p.parse_ncu_number("97.44") == 97.44
    for bad in ("1,23", "1,2345", ",123", "123,", " 7", "7 ", "+7", "-7", "1e5", "", "1.", ".5", "١٢"):
        with pytest.raises(BundleError):
            p.parse_ncu_number(bad)


def _forge_run_record(root: Path, change) -> str:
    rel = "profile/workspace-16-8-task-r01.json.gz"
    rec = archive.read_json_gz(REAL / rel)
    change(rec)
    (root / rel).unlink()
    archive.write_json_gz(root / rel, rec)
    _rebuild(root)
    return rel


@pytest.mark.parametrize("raw,unit,needle", [
    ("8.150784", "Mbyte", "scaled unit 'Mbyte'"),
    ("8,15,0784", "byte", "not a number as ncu prints one"),
])
def test_archive_with_a_scaled_or_malformed_counter_fails_in_one_line(tmp_path, raw, unit, needle):
    root = _copy(tmp_path)

    def change(rec):
        rec["metric_rows"][p.DRAM_READ].update(raw_value=raw, raw_unit=unit)

    rel = _forge_run_record(root, change)
    fails = _fails(root)
    assert [(r["check_id"], r["subject"]) for r in fails] == [("run.profile.error", rel)], fails
    assert needle in fails[0]["reason"]


def test_archive_hit_rate_flag_must_match_the_value(tmp_path):
    root = _copy(tmp_path)

    def change(rec):  # 100.5 % is kept, so the record must flag it
        rec["metric_rows"][p.L2_HIT_RATE].update(raw_value="100.50", value=100.5)
        rec["l2_sector_hit_rate_percent"] = 100.5

    rel = _forge_run_record(root, change)
    ids = {(r["check_id"], r["subject"].split()[0]) for r in _fails(root)}
    assert ("profile.hit_rate_flag", rel) in ids


def test_workspace_config_with_a_trailing_newline_is_malformed(monkeypatch):
    assert fixture.WORKSPACE_RE.pattern == WORKSPACE_RE.pattern  # one grammar in the fixture and the verifier
    for good in (":16:8", ":4096:8", ":0:0", ":4096:2:16:8"):
        monkeypatch.setenv(fixture.WORKSPACE_ENV, good)
        monkeypatch.setattr(fixture, "WORKSPACE_AT_IMPORT", None)
        assert fixture.require_workspace_config() == good
    for bad in (":16:8\n", ":16:8 ", " :16:8", ":16:8:", "16:8", ":١٦:8", ""):
        monkeypatch.setenv(fixture.WORKSPACE_ENV, bad)
        with pytest.raises(BundleError, match="is malformed"):
            fixture.require_workspace_config()


def test_archive_record_with_a_trailing_newline_workspace_fails(tmp_path):
    root = _copy(tmp_path)
    rel = "compare/workspace-16-8.json.gz"
    rec = archive.read_json_gz(REAL / rel)
    rec["cublas_workspace_config"] = ":16:8\n"
    (root / rel).unlink()
    archive.write_json_gz(root / rel, rec)
    _rebuild(root)
    ids = {(r["check_id"], r["subject"].split()[0]) for r in _fails(root)}
    assert ("run.fixture.workspace_config", rel) in ids


# --- 7. the host's reference data -------------------------------------------------------------
def _host_error(res: subprocess.CompletedProcess, folder: Path, needle: str) -> None:
    out = res.stdout + res.stderr
    assert res.returncode == 2 and "Traceback" not in out, out
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("rev88: error: "), out
    assert str(folder) in lines[0] and needle in lines[0], lines[0]
    assert "verified" not in lines[0] and "FAIL" not in out


@pytest.mark.parametrize("archive_dir", [REAL, ORIGINAL_ARCHIVE], ids=["run", "original"])
def test_missing_raw_mnist_is_one_host_line(tmp_path, archive_dir):
    res = _cli(archive_dir, env={"REV88_RAW_DIR": str(tmp_path)})
    _host_error(res, tmp_path, "raw MNIST files on this host are missing or altered")
    assert "REV88_RAW_DIR" in res.stderr


def test_altered_raw_mnist_is_one_host_line(tmp_path):
    raw = tmp_path / "mnist"
    shutil.copytree(SHARED_MNIST, raw)
    blob = bytearray((raw / "train-labels-idx1-ubyte.gz").read_bytes())
    blob[100] ^= 1
    (raw / "train-labels-idx1-ubyte.gz").write_bytes(bytes(blob))
    res = _cli(REAL, env={"REV88_RAW_DIR": str(raw)})
    _host_error(res, raw, "train-labels-idx1-ubyte.gz altered")


def test_missing_frozen_reference_is_one_host_line_not_verified(tmp_path):
    nowhere = tmp_path / "nowhere"
    res = _cli(REAL, env={"REV88_ORIGINAL_DIR": str(nowhere)})
    _host_error(res, nowhere, "frozen reference archive is missing on this host")
    assert "REV88_ORIGINAL_DIR" in res.stderr


def test_altered_frozen_reference_is_one_host_line(tmp_path):
    copy = tmp_path / "rev88-original"
    shutil.copytree(ORIGINAL_ARCHIVE, copy)
    rel = copy / "results" / "draw-03.json"
    rel.write_text(rel.read_text().replace('"parameter_count": ', '"parameter_count":  ', 1))
    res = _cli(REAL, env={"REV88_ORIGINAL_DIR": str(copy)})
    _host_error(res, copy, "frozen reference archive on this host is altered")


# --- the safe reader on its own ---------------------------------------------------------------
def test_safe_reader_refuses_special_files_and_bounds_reads(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(RecordError, match="FIFO"):
        safeio.read_regular(fifo, limit=10, where="fifo")
    big = tmp_path / "big"
    big.write_bytes(b"x" * 11)
    with pytest.raises(RecordError, match="more than the 10 bytes"):
        safeio.read_regular(big, limit=10, where="big")
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(archive.gzip_bytes(b"\0" * (8 << 20)))
    member = safeio.read_member(bomb, gz=True, content_limit=1 << 20, keep=1 << 20, where="bomb.gz")
    assert member.over_limit and member.content is None and "exceeds" in member.gzip_problem
    cut = tmp_path / "cut.gz"
    cut.write_bytes(archive.gzip_bytes(b"abc" * 1000)[:-3])
    assert "trailer is cut" in safeio.read_member(cut, gz=True, content_limit=1 << 20, keep=0, where="c").gzip_problem
    crc = bytearray(archive.gzip_bytes(b"abc"))
    crc[-8] ^= 1
    (tmp_path / "crc.gz").write_bytes(bytes(crc))
    assert "CRC-32" in safeio.read_member(tmp_path / "crc.gz", gz=True, content_limit=99, keep=99, where="c").gzip_problem
    raw_deflate = zlib.compress(b"abc")
    (tmp_path / "z.gz").write_bytes(raw_deflate)
    assert "not a gzip stream" in safeio.read_member(tmp_path / "z.gz", gz=True, content_limit=99, keep=99,
                                                      where="z").gzip_problem
