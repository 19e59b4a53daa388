"""The UNAVAILABLE reason of the check families skipped after an integrity FAIL names that FAIL: a renamed
archive's hashes all match, so "hashes do not match" would send the reader the wrong way."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO_ROOT, linked_copy

PINNED_CPU = REPO_ROOT / "evidence" / "pinned-cpu-20261201"


def _verdicts(root: Path):
    from verify.registry import verify_archive  # noqa: PLC0415

    return list(verify_archive(root).results)


def test_a_renamed_archive_is_skipped_for_its_run_id_not_for_hashes(tmp_path: Path) -> None:
    results = _verdicts(linked_copy(PINNED_CPU, tmp_path, "renamed"))
    assert {r.check_id for r in results if r.status.value == "FAIL"} == {"integrity.run_id"}
    skipped = [r for r in results if r.status.value == "UNAVAILABLE" and r.check_id.startswith("run.")]
    assert skipped and all("integrity.run_id" in r.reason and "hashes do not match" not in r.reason
                           for r in skipped), {r.reason for r in skipped}


def test_a_changed_file_is_skipped_for_its_hash(tmp_path: Path) -> None:
    root = linked_copy(PINNED_CPU, tmp_path)
    rel = root / "qualify" / "accuracy.json.gz"
    data = bytearray(rel.read_bytes())
    data[-1] ^= 0xFF
    rel.unlink()  # break the hard link
    rel.write_bytes(bytes(data))
    results = _verdicts(root)
    failed = {r.check_id for r in results if r.status.value == "FAIL"}
    skipped = [r for r in results if r.status.value == "UNAVAILABLE" and r.check_id.startswith("run.")]
    assert skipped and all(any(check in r.reason for check in failed) for r in skipped), (failed, skipped[0].reason)
