"""The catalog of checks (``verify/catalog.py``): complete, live, documented, and reachable from ``rev88 verify``.

Every verdict the verifier gives on the kept archives and on forged copies of them carries an id the
catalog declares; every entry's id occurs in ``verify/``'s source; ``docs/checks.md`` is what
``python -m verify.catalog --markdown`` prints; and a check that compared nothing is UNAVAILABLE.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bundle import archive
from bundle.cli import app
from tests.conftest import REPO_ROOT, forge_record, linked_copy, one_line_error
from verify import catalog
from verify.checks.consistency import check_same
from verify.checks.original_fields import fields_same
from verify.checks.run_common import compare_fields
from verify.registry import discover_archives, verify_archive, verify_archives
from verify.result import Status

EVIDENCE = REPO_ROOT / "evidence"
KEPT = discover_archives(EVIDENCE)
FUSED = EVIDENCE / "h200-fused-cuda-20261205"
PINNED = EVIDENCE / "pinned-cpu-20261201"
ORIGINAL = EVIDENCE / "rev88-original"
pytestmark = [pytest.mark.skipif(not all(p.is_dir() for p in (FUSED, PINNED, ORIGINAL)),
                                 reason="the kept archives are absent"),
              pytest.mark.usefixtures("hidden_ncu_report")]


def _unknown(reports) -> list[tuple[str, str]]:
    known = catalog.all_ids()
    return sorted({(rep.archive, r.check_id) for rep in reports for r in rep.results if r.check_id not in known})


def test_every_verdict_on_the_kept_archives_is_in_the_catalog():
    reports = verify_archives(KEPT)
    assert len(reports) == len(KEPT) >= 5
    assert all(rep.ok for rep in reports), [(rep.archive, [r.check_id for r in rep.failures()]) for rep in reports]
    assert _unknown(reports) == []


def _forged_fused(tmp_path: Path) -> Path:
    """A copy of the fused archive with a wrong energy figure, a draw record missing a key, and a draw removed."""
    root = linked_copy(FUSED, tmp_path)
    trial = next(p for p in sorted((root / "energy").glob("trial-*.json.gz")) if "nvml" not in p.name)

    def wrong_energy(rec: dict) -> None:
        rec["energy"]["trials"][0]["idle_adjusted_mj_per_task"] *= 1.01

    forge_record(root, str(trial.relative_to(root)), wrong_energy)
    forge_record(root, "qualify/draw-03.json.gz", lambda rec: rec.pop("draw_index"))
    for name in ("draw-05.json.gz", "draw-05.predictions.npy"):
        (root / "qualify" / name).unlink()
    (root / "manifest.json").unlink()
    archive.RunArchive(root).write_manifest()
    return root


def _tampered(src: Path, tmp_path: Path, rel: str) -> Path:
    """A copy of *src* with one byte appended to *rel* and its manifest left as it was (integrity fails)."""
    root = linked_copy(src, tmp_path)
    blob = (root / rel).read_bytes()
    (root / rel).unlink()  # break the hard link
    (root / rel).write_bytes(blob + b"\0")
    return root


def test_every_verdict_on_forged_copies_is_in_the_catalog(tmp_path):
    forged = [_forged_fused(tmp_path / "content"),
              _tampered(PINNED, tmp_path / "run", "qualify/draw-00.predictions.npy"),
              _tampered(ORIGINAL, tmp_path / "original", "accuracy.json")]
    reports = [verify_archive(p) for p in forged]
    fails = [{r.check_id for r in rep.failures()} for rep in reports]
    assert {"qualify.record.draw_index", "accuracy.draw.present"} <= fails[0], fails[0]
    assert any(i.startswith("energy.trial.") for i in fails[0]), fails[0]
    assert any(i.startswith("integrity.") for i in fails[1]), fails[1]
    assert any(i.startswith("original.integrity.") for i in fails[2]), fails[2]
    assert _unknown(reports) == []


def test_every_catalog_entry_occurs_in_the_verifier_source():
    source = "\n".join(p.read_text(encoding="utf-8") for p in (REPO_ROOT / "verify").rglob("*.py")
                       if p.name != "catalog.py")
    dead = []
    for entry in catalog.CATALOG:
        if entry.values:
            pieces = [piece for piece in re.split(r"\{[^}]*\}", entry.id) if piece]
            values = [v for _, vs in entry.values for v in vs]
            found = all(piece in source for piece in pieces) and all(v in source for v in values)
        else:
            found = f'"{entry.id}"' in source
        if not found:
            dead.append(entry.id)
    assert dead == []


def test_entries_are_well_formed_and_declared_once():
    ids = catalog.all_ids()  # raises on an id declared twice
    assert len(ids) >= 500
    for entry in catalog.CATALOG:
        assert entry.basis in catalog.BASES and entry.tolerance in catalog.TOLERANCE_WHY, entry
        assert entry.compares and entry.recomputes and entry.where, entry
        assert (REPO_ROOT / "verify" / (entry.where.split(".")[0].split(",")[0] + ".py")).is_file(), entry.where
        assert bool(entry.values) == ("{" in entry.id), entry.id


def test_checks_md_is_generated_from_the_catalog():
    assert (REPO_ROOT / "docs" / "checks.md").read_text(encoding="utf-8") == catalog.markdown(), (
        "docs/checks.md is stale: run `python -m verify.catalog --markdown > docs/checks.md`")


def test_verify_lists_the_catalog_and_prints_one_entry():
    runner = CliRunner()
    res = runner.invoke(app, ["verify", "--list-checks"])
    assert res.exit_code == 0, res.output
    listed = [line.split()[0] for line in res.output.splitlines()]
    assert listed == sorted(catalog.all_ids())
    res = runner.invoke(app, ["verify", "--check", "energy.summary.wall_ms_per_task.mean"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("energy.summary.wall_ms_per_task.mean  (pattern energy.summary.{key}.mean)\n")
    assert "rel 1e-12" in res.output
    res = runner.invoke(app, ["verify", "--check", "reproduce.timing.record_stamps", "--json"])
    assert json.loads(res.output)["family"] == "reproduce"
    one_line_error(runner.invoke(app, ["verify", "--check", "no.such.check"]), "no.such.check", "--list-checks")
    res = runner.invoke(app, ["verify", "--explain"])  # keeps its meaning: the attested fields
    assert res.exit_code == 0 and "--list-checks" not in res.output and "_at_utc" in res.output


def test_a_check_that_compared_nothing_is_unavailable():
    verdict = check_same("consistency.software", [], what="software")
    assert verdict.status is Status.UNAVAILABLE and "nothing was compared" in verdict.reason
    one = fields_same("original.cache.gpu", [("cache baseline", "H100")], "GPU")
    assert one.status is Status.UNAVAILABLE and "fewer than two" in one.reason
    assert fields_same("original.cache.gpu", [("a", "H100"), ("b", "H100")], "GPU").status is Status.PASS
    assert compare_fields("energy.between_boards", "x", {"a": 1.0}, {}, what="spread").status is Status.UNAVAILABLE
    assert compare_fields("energy.between_boards", "x", {"a": 1.0}, {"a": 1.0}, what="spread").status is Status.PASS


def test_record_stamps_over_no_stamp_are_unavailable_not_pass():
    """The H200 archive's qualification invocation left no stamp to place in its span: UNAVAILABLE."""
    rep = verify_archive(EVIDENCE / "h200-20261202")
    stamps = [r for r in rep.results if r.check_id == "reproduce.timing.record_stamps" and r.subject.startswith("qualify/")]
    assert stamps and all(r.status is Status.UNAVAILABLE and r.recorded == 0 for r in stamps), stamps
    assert any(r.status is Status.PASS for r in rep.results if r.check_id == "reproduce.timing.record_stamps")


def test_config_sha_over_no_record_is_unavailable_not_pass():
    """The pinned CPU archive's records state no config_file_sha256 the check reads: UNAVAILABLE, 0 records."""
    rep = verify_archive(PINNED)
    got = [r for r in rep.results if r.check_id == "consistency.config_file_sha256"]
    assert [(r.status, r.subject) for r in got] == [(Status.UNAVAILABLE, "0 records")]
