"""Consistent forgeries that used to verify (issue 11): each now fails, naming the check that catches it.

Run-archive forgeries rewrite records of a hard-linked copy of the shipped H200 archive, re-derive
every figure the forged value feeds (as the writer would) and rebuild the manifest, so integrity
passes and only a cross-check against another file of the archive can catch them. Forgeries of
the original archive are applied in memory through the coverage tool's consistent rebuild
(``scripts/leaf_coverage.py``: every recorded sha256 of a changed file replaced, cascading), because
its copy on disk is pinned by this bundle and any on-disk change fails integrity first.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from bundle import archive
from bundle import energy as en
from bundle import profile as counters
from bundle.phases.energy import _interleaved_summary
from tests.conftest import H200_ARCHIVE, REPO_ROOT, linked_copy, load_script
from verify.checks.memory import check_fixture_memory
from verify.registry import verify_archive
from verify.result import Status

REAL = H200_ARCHIVE
ORIGINAL = REPO_ROOT / "evidence" / "rev88-original"
pytestmark = [pytest.mark.skipif(not REAL.is_dir() or not ORIGINAL.is_dir(), reason="the shipped archives are absent"),
              pytest.mark.usefixtures("hidden_ncu_report")]



def _copy(tmp_path: Path, name: str = REAL.name) -> Path:
    return linked_copy(REAL, tmp_path, name)


def _read(root: Path, rel: str) -> dict:
    return archive.read_json_gz(root / rel)


def _write(root: Path, rel: str, obj: dict) -> None:
    (root / rel).unlink()  # break the hard link
    archive.write_json_gz(root / rel, obj)


def _write_bytes(root: Path, rel: str, data: bytes) -> None:
    (root / rel).unlink()
    if rel.endswith(".gz"):
        archive.write_bytes_gz(root / rel, data)
    else:
        archive.atomic_write_bytes(root / rel, data)


def _rebuild_manifest(root: Path) -> None:
    (root / "manifest.json").unlink()
    archive.RunArchive(root).write_manifest()


def _failures(root: Path) -> dict[str, list]:
    rep = verify_archive(root)
    fails = rep.failures()
    assert not any(r.check_id.startswith("integrity.") for r in fails), [r.check_id for r in fails]
    out: dict[str, list] = {}
    for r in fails:
        out.setdefault(r.check_id, []).append(r)
    return out


def _retrial(trial: dict) -> None:
    """Re-derive one trial's interval and per-task figures from its (forged) stamps, as the writer does."""
    fig = en.recompute_trial(trial)
    for key in ("idle_before", "idle_after", "active"):
        trial[key].update(fig[key])
    for key in ("paired_idle_w", *en.PER_TASK_KEYS):
        trial[key] = fig[key]


def _rebuild_interleaved(root: Path) -> None:
    summary = _read(root, "energy/interleaved.json.gz")
    records = [(t["round"], t["workspace"], t["record"][: -len(".json.gz")], _read(root, f"energy/{t['record']}"))
               for t in summary["trials"]]
    new = _interleaved_summary(records, summary["settings"], root / "energy", summary["draw_index"])
    new["completed_at_utc"] = summary["completed_at_utc"]
    _write(root, "energy/interleaved.json.gz", new)


def test_trial_counter_changed_everywhere_but_in_its_nvml_log_fails(tmp_path):
    root = _copy(tmp_path)
    rel = "energy/trial-r00-workspace-4096-8.json.gz"
    rec = _read(root, rel)
    trial = rec["energy"]["trials"][0]
    trial["active"]["end"]["energy_mj"] += 50_000  # 50 J more in the active window
    _retrial(trial)
    _write(root, rel, rec)
    _rebuild_interleaved(root)
    _rebuild_manifest(root)
    fails = _failures(root)
    # 50 J over a ~10 s window is ~5 W that the window's power samples do not show
    assert set(fails) == {"energy.nvml_log.stamps", "energy.trial.power_samples_vs_counter"}, sorted(fails)
    assert "the log read" in fails["energy.nvml_log.stamps"][0].reason
    assert "active: " in fails["energy.trial.power_samples_vs_counter"][0].reason


TRIAL, TRIAL_LOG = "energy/trial-r00-workspace-4096-8.json.gz", "energy/trial-r00-workspace-4096-8.nvml.jsonl.gz"
STAMP_ORDER = [(w, e) for w in ("idle_before", "active", "idle_after") for e in ("start", "end")]


def _log_lines(root: Path) -> list[dict]:
    return [json.loads(x) for x in gzip.decompress((root / TRIAL_LOG).read_bytes()).decode().splitlines()]


def _write_log(root: Path, lines: list[dict]) -> None:
    _write_bytes(root, TRIAL_LOG, "".join(json.dumps(x) + "\n" for x in lines).encode())


def _counter_reads(lines: list[dict]) -> list[dict]:
    return [x for x in lines if x["channel"] == "main" and x["call"] == "nvmlDeviceGetTotalEnergyConsumption"]


def _stamp_reads(trial: dict, reads: list[dict]) -> dict[tuple[str, str], dict]:
    """The counter read each stamp of the (one) trial took: the last of its polls (aligned stamps)."""
    out, pos = {}, 0
    for w, e in STAMP_ORDER:
        pos += trial[w][e]["polls"]
        out[(w, e)] = reads[pos - 1]
    return out


def _finish(root: Path, rec: dict) -> dict[str, list]:
    _retrial(rec["energy"]["trials"][0])
    _write(root, TRIAL, rec)
    _rebuild_interleaved(root)
    _rebuild_manifest(root)
    return _failures(root)


def test_active_end_lowered_in_its_record_and_its_nvml_log_fails_the_counter_order_and_the_samples(tmp_path):
    """20 J less in the active window, the stamp and the log's read both changed: the counter then runs
    backwards in the log, and the window's samples still show the board's real power."""
    root = _copy(tmp_path)
    rec, lines = _read(root, TRIAL), _log_lines(root)
    trial = rec["energy"]["trials"][0]
    _stamp_reads(trial, _counter_reads(lines))[("active", "end")]["value"] -= 20_000
    trial["active"]["end"]["energy_mj"] -= 20_000
    _write_log(root, lines)
    fails = _finish(root, rec)
    assert set(fails) == {"energy.nvml_log.counter_order", "energy.trial.power_samples_vs_counter"}, sorted(fails)
    assert "go backwards" in fails["energy.nvml_log.counter_order"][0].reason


def test_counter_lowered_from_the_active_end_on_in_record_and_log_fails_only_the_samples(tmp_path):
    """Every counter read from the active window's end on 20 J lower, in the record and in the log: the
    counter still grows and every stamp is its read, so only the power samples disagree."""
    root = _copy(tmp_path)
    rec, lines = _read(root, TRIAL), _log_lines(root)
    trial = rec["energy"]["trials"][0]
    reads = _counter_reads(lines)
    first = reads.index(_stamp_reads(trial, reads)[("active", "end")])
    first -= trial["active"]["end"]["polls"] - 1  # the polls of that stamp too
    for read in reads[first:]:
        read["value"] -= 20_000
    for w, e in STAMP_ORDER[3:]:
        trial[w][e]["energy_mj"] -= 20_000
    _write_log(root, lines)
    fails = _finish(root, rec)
    assert set(fails) == {"energy.trial.power_samples_vs_counter"}, sorted(fails)


@pytest.mark.parametrize(("shift_mw", "fails_check"), [(200, False), (3_000, True)])
def test_active_power_samples_raised_in_record_and_log_against_the_counter(tmp_path, shift_mw, fails_check):
    """Every active-window power sample raised by 0.2 W (within the check's slack) passes; by 3 W fails."""
    root = _copy(tmp_path)
    rec, lines = _read(root, TRIAL), _log_lines(root)
    trial = rec["energy"]["trials"][0]
    t0, t1 = trial["active"]["start"]["time_s"], trial["active"]["end"]["time_s"]
    sampler = [x for x in lines if x["channel"] == "sampler"]
    for sample, read in zip(trial["power_samples"], sampler, strict=False):
        if t0 <= sample["time_s"] <= t1:
            read["value"][0]["value"] += shift_mw
            sample["power_w"] = read["value"][0]["value"] / 1000
    _write_log(root, lines)
    fails = _finish(root, rec)
    if fails_check:
        assert set(fails) == {"energy.trial.power_samples_vs_counter"}, sorted(fails)
    else:
        assert not fails, sorted(fails)


@pytest.mark.parametrize(("shift_s", "fails_check"), [(0.004, False), (0.050, True)])
def test_power_sample_time_moved_against_its_sampler_read(tmp_path, shift_s, fails_check):
    """A sample time 4 ms past its read (a GIL wait of the sampler thread) passes; 50 ms fails."""
    root = _copy(tmp_path)
    rel = "energy/trial-r00-workspace-4096-8.json.gz"
    rec = _read(root, rel)
    sample = rec["energy"]["trials"][0]["power_samples"][7]
    log = gzip.decompress((root / "energy/trial-r00-workspace-4096-8.nvml.jsonl.gz").read_bytes()).decode().splitlines()
    reads = [json.loads(line) for line in log if json.loads(line).get("channel") == "sampler"]
    sample["time_s"] = reads[7]["t_end_s"] + shift_s
    _write(root, rel, rec)
    _rebuild_interleaved(root)
    _rebuild_manifest(root)
    fails = _failures(root)
    if fails_check:
        assert set(fails) == {"energy.nvml_log.power_samples"}, sorted(fails)
        assert "sample 7 " in fails["energy.nvml_log.power_samples"][0].reason
    else:
        assert not fails, sorted(fails)


def test_profile_csv_record_and_summary_changed_while_its_ncu_output_prints_the_real_count_fails(tmp_path):
    root = _copy(tmp_path)
    name = "workspace-16-8-task-r01"  # one of the 8 runs without a stored .ncu-rep
    rec_rel, csv_rel = f"profile/{name}.json.gz", f"profile/{name}.csv.gz"
    rec = _read(root, rec_rel)
    old = rec["metric_rows"]["dram__bytes_read.sum"]["raw_value"]
    new = f"{int(old.replace(',', '')) // 2:,}"
    text = gzip.decompress((root / csv_rel).read_bytes()).decode()
    assert text.count(f'"{old}"') == 1
    text = text.replace(f'"{old}"', f'"{new}"')
    _write_bytes(root, csv_rel, text.encode())
    rows = counters.parse_raw_csv(text, hit_rate_limit_percent=None)
    rec["metric_rows"] = rows.metric_rows()
    rec.update(counters.normalise_counters(rec["metric_rows"], counters.SEQUENCES_IN_RANGE["task"], "task"))
    value = rows.metrics["dram__bytes_read.sum"].value
    if "metrics" in rec["ncu_report_cross_check"]:  # skipped at run time where ncu_report was not importable
        rec["ncu_report_cross_check"]["metrics"]["dram__bytes_read.sum"].update(csv_value=value, report_value=value)
    rec["files"]["csv"].update(archive.file_entry(root / csv_rel, csv_rel) | {"path": f"{name}.csv.gz"})
    rec["files"]["csv"].pop("size_bytes")
    _write(root, rec_rel, rec)
    summary = _read(root, "profile/profiles.json.gz")
    entry = summary["profiles"]["workspace-16-8-task"]
    reps = []
    for run_name in entry["runs"]:
        r = _read(root, f"profile/{run_name}.json.gz")
        figures = counters.normalise_counters(r["metric_rows"], counters.SEQUENCES_IN_RANGE["task"], "task")
        reps.append({k: v for k, v in figures.items() if k != "counter_unit"})
    entry["repeats"] = reps
    entry.update(counters.summarise_repeats(reps))
    _write(root, "profile/profiles.json.gz", summary)
    _rebuild_manifest(root)
    fails = _failures(root)
    assert set(fails) == {"profile.ncu_output.csv"}, sorted(fails)


def test_one_peak_changed_while_the_other_records_of_its_workspace_say_otherwise_fails(tmp_path):
    root = _copy(tmp_path)
    rel = "compare/workspace-16-8.json.gz"
    rec = _read(root, rel)
    rec["memory"]["prepare_and_invoke_peak_allocated_bytes"] += 1 << 20
    rec["memory"]["added_peak_over_entry_allocated_bytes"] += 1 << 20
    _write(root, rel, rec)
    cmp = _read(root, "compare/comparison.json.gz")
    base_peak = cmp["configs"][0]["memory"]["peak_allocated_bytes"]
    peak = rec["memory"]["prepare_and_invoke_peak_allocated_bytes"]
    row = next(r for r in cmp["configs"] if r["workspace"] == ":16:8")
    row["record_sha256"] = archive.file_sha256(root / rel)
    row["memory"].update(peak_allocated_bytes=peak, peak_allocated_mib=peak / (1 << 20),
                         added_peak_over_entry_allocated_bytes=peak)
    saved = base_peak - peak
    cmp["reductions_vs_baseline"][":16:8"] = {"peak_allocated_bytes_saved": saved,
                                              "peak_allocated_mib_saved": saved / (1 << 20),
                                              "peak_allocated_reduction_percent": 100.0 * saved / base_peak,
                                              "peak_allocated_ratio_to_baseline": peak / base_peak}
    _write(root, "compare/comparison.json.gz", cmp)
    _rebuild_manifest(root)
    fails = _failures(root)
    assert set(fails) == {"memory.workspace_peak", "compare.peak_allocated_bytes"}, sorted(fails)
    assert re.search(r"differs from (\d+) of the \1 other records of the same workspace config",
                     fails["compare.peak_allocated_bytes"][0].reason)


def test_energies_divided_by_1000_with_the_nvml_log_to_match_fail_the_power_plausibility(tmp_path):
    root = _copy(tmp_path)
    rel, log_rel = "energy/trial-r01-workspace-16-8.json.gz", "energy/trial-r01-workspace-16-8.nvml.jsonl.gz"
    rec = _read(root, rel)
    lines = [json.loads(x) for x in gzip.decompress((root / log_rel).read_bytes()).decode().splitlines()]
    for line in lines:
        if line["call"] == "nvmlDeviceGetTotalEnergyConsumption":
            line["value"] //= 1000
    _write_bytes(root, log_rel, "".join(json.dumps(x) + "\n" for x in lines).encode())
    for trial in rec["energy"]["trials"]:
        for window in ("idle_before", "active", "idle_after"):
            for end in ("start", "end"):
                trial[window][end]["energy_mj"] //= 1000
        _retrial(trial)
    _write(root, rel, rec)
    _rebuild_interleaved(root)
    _rebuild_manifest(root)
    fails = _failures(root)
    assert set(fails) == {"energy.power_plausible", "energy.trial.power_samples_vs_counter"}, sorted(fails)
    assert "telemetry" in fails["energy.power_plausible"][0].reason


def _qualify_fixture_change(key: str, value):
    def change(rec: dict) -> None:
        rec["fixture"][key] = value
    return change


@pytest.mark.parametrize("rel,change,check_id", [
    ("compare/comparison.json.gz",
     lambda c: (c["configs"][1]["memory_audit"].update(passed=False), c.update(memory_audit_passed=False)),
     "compare.memory_audit"),
    ("qualify/draw-03.json.gz", _qualify_fixture_change("fresh_process", False), "qualify.record.fresh_process"),
    ("qualify/draw-03.json.gz", _qualify_fixture_change("predictions_file_sha256", "0" * 64),
     "qualify.record.fresh_process"),
    ("qualify/accuracy.json.gz", lambda a: a["frozen_comparison"]["rows"][2].update(frozen_correct=1),
     "accuracy.record.frozen_comparison"),
    ("profile/workspace-4096-8-task-r00.json.gz", lambda r: r.update(l2_sector_hit_rate_above_100_percent=True),
     "profile.hit_rate_flag"),
])
def test_fields_nothing_read_now_fail(tmp_path, rel, change, check_id):
    root = _copy(tmp_path)
    rec = _read(root, rel)
    change(rec)
    _write(root, rel, rec)
    _rebuild_manifest(root)
    assert check_id in _failures(root)


def test_smoke_config_batch_size_fails(tmp_path):
    root = _copy(tmp_path)
    rel = "validate/smoke/config.json"
    cfg = json.loads((root / rel).read_bytes())
    cfg["batch_size"] = 16
    _write_bytes(root, rel, (json.dumps(cfg, indent=2) + "\n").encode())
    _rebuild_manifest(root)
    assert "validate.smoke.config_file" in _failures(root)


def test_refused_archive_contents_fail(tmp_path):
    from protocol.fixture_inputs import npz_bytes, smoke_inputs

    root = _copy(tmp_path)
    rel = "validate/smoke/with-test-labels.npz"
    with np.load(io.BytesIO((root / rel).read_bytes()), allow_pickle=False) as z:
        assert sorted(z.files) == ["test_images", "test_labels", "train_images", "train_labels"]
    _write_bytes(root, rel, npz_bytes({**smoke_inputs(), "test_labels": np.ones(7, dtype=np.int64)}))
    _rebuild_manifest(root)
    assert set(_failures(root)) == {"validate.refused_npz"}


def test_run_id_against_the_environment_fails(tmp_path):
    root = _copy(tmp_path)
    env = _read(root, "environment.json.gz")
    env["run_id"] = "another-run"
    _write(root, "environment.json.gz", env)
    _rebuild_manifest(root)
    rep = verify_archive(root)
    assert any(r.check_id == "integrity.run_id" for r in rep.failures())


def test_a_peak_of_minus_seven_fails_the_peak_checks():
    mem = _read(REAL, "compare/workspace-16-8.json.gz")["memory"]
    ok = {r.check_id: r.status for r in check_fixture_memory(mem, subject="s", where="w")}
    assert ok["memory.peak_allocated_bytes"] is Status.PASS and ok["memory.peak_reserved_bytes"] is Status.PASS
    mem = dict(mem, prepare_and_invoke_peak_allocated_bytes=-7, prepare_and_invoke_peak_reserved_bytes=-7)
    bad = {r.check_id: r.status for r in check_fixture_memory(mem, subject="s", where="w")}
    assert bad["memory.peak_allocated_bytes"] is Status.FAIL and bad["memory.peak_reserved_bytes"] is Status.FAIL


# --- the original archive: in memory, rebuilt consistently --------------------------------------

def _tool():
    return load_script("leaf_coverage")


@pytest.fixture(scope="module")
def original_harness():
    return _tool().Harness(ORIGINAL)


def _original_fails(h, changes: dict[str, object]) -> set[str]:
    return {r.check_id for r in h.evaluate(changes)}


def test_original_is_clean_in_memory(original_harness):
    assert original_harness.baseline_fails == []
    assert _original_fails(original_harness, {}) == set()


def test_original_profile_workspace_labels_swapped_fail(original_harness):
    h = original_harness
    sm = copy.deepcopy(h.parsed["cache-audit/summary.json"])
    sm["profiles"]["profile-baseline-task"]["workspace"] = ":16:8"
    sm["profiles"]["profile-small-task"]["workspace"] = ":4096:8"
    assert "original.cache.profile.memory" in _original_fails(h, {"cache-audit/summary.json": sm})


@pytest.mark.parametrize("key,value,check_id", [
    ("predictions_bit_equal", 100_000, "original.cache.summary.predictions_bit_equal"),
    ("draws_bit_equal", 10, "original.cache.summary.qualification"),
])
def test_original_summary_counts_are_recomputed(original_harness, key, value, check_id):
    h = original_harness
    sm = copy.deepcopy(h.parsed["cache-audit/summary.json"])
    sm["qualification"][key] = value
    assert check_id in _original_fails(h, {"cache-audit/summary.json": sm})


@pytest.mark.parametrize("key,value,check_id", [
    ("maximum_abs_error", 3e-5, "original.cuda_validation.maximum_abs_error"),
    ("checks", 211, "original.cuda_validation.check_count"),
])
def test_original_cuda_validation_is_checked(original_harness, key, value, check_id):
    h = original_harness
    cv = copy.deepcopy(h.parsed["cache-audit/cuda-validation.json"])
    cv["numerical_validation"][key] = value
    assert check_id in _original_fails(h, {"cache-audit/cuda-validation.json": cv})


def test_original_cache_accuracy_is_recomputed_not_copied(original_harness):
    h = original_harness
    sub = copy.deepcopy(h.parsed["cache-audit/submission.json"])
    sm = copy.deepcopy(h.parsed["cache-audit/summary.json"])
    for block in (sub["accuracy"], sm["qualification"]["inherited_accuracy"]):
        block["correct"] += 1  # both copies agree; the rows of accuracy.json do not
    fails = _original_fails(h, {"cache-audit/submission.json": sub, "cache-audit/summary.json": sm})
    assert "accuracy.aggregate.correct" in fails


def test_original_restored_predictions_are_checked_and_rescored():
    rep = verify_archive(ORIGINAL)
    by_id: dict[str, list] = {}
    for r in rep:
        by_id.setdefault(r.check_id, []).append(r)
    for check_id in ("original.accuracy.rescored", "original.result.predictions_sha256", "original.cache.predictions_file"):
        assert by_id[check_id] and all(r.status is Status.PASS for r in by_id[check_id]), check_id
    assert len(by_id["original.accuracy.rescored"]) == 11
    assert [r.status for r in by_id["original.integrity.bundle_added"]] == [Status.PASS]


def test_original_with_an_altered_restored_file_or_note_fails(tmp_path):
    root = tmp_path / ORIGINAL.name
    shutil.copytree(ORIGINAL, root)
    arr = np.load(root / "predictions" / "draw-04.npy", allow_pickle=False)
    arr[0] = (arr[0] + 1) % 10
    np.save(root / "predictions" / "draw-04.npy", arr, allow_pickle=False)
    (root / "predictions" / "PROVENANCE.md").write_text("edited\n", encoding="utf-8")
    failed = {(r.check_id, r.subject) for r in verify_archive(root).failures()}
    assert ("original.integrity.binary_sha256", "predictions/draw-04.npy") in failed
    assert ("original.integrity.bundle_added", "predictions/PROVENANCE.md") in failed


def test_original_without_the_restored_files_reads_unavailable_again(tmp_path):
    root = tmp_path / ORIGINAL.name
    shutil.copytree(ORIGINAL, root)
    shutil.rmtree(root / "predictions")
    rep = verify_archive(root)
    assert rep.ok
    assert {r.status for r in rep if r.check_id == "original.accuracy.rescored"} == {Status.UNAVAILABLE}


def test_samples_vs_counter_leaves_windows_after_the_sampler_stopped_unavailable_but_fails_a_gap():
    """Samples ending for good (field 186 stopped answering) leave the later windows UNAVAILABLE, never PASS; no
    samples at all leave every window so; the active window's samples cut out while the sampler ran on fail; a
    record sampled every 0.5 s (every tenth sample kept) is compared against its own interval."""
    from verify.checks.energy import check_samples_vs_counter  # noqa: PLC0415

    trial = _read(REAL, TRIAL)["energy"]["trials"][0]
    a0, a1 = trial["active"]["start"]["time_s"], trial["active"]["end"]["time_s"]

    def verdicts(samples: list, interval: float | None = 0.05) -> list:
        return check_samples_vs_counter(dict(trial, power_samples=samples), subject="s", where="w",
                                        sample_interval_s=interval)

    (whole,) = verdicts(trial["power_samples"])
    assert whole.status is Status.PASS and len(whole.recomputed) == 3
    compared, left = verdicts([s for s in trial["power_samples"] if s["time_s"] < a0])
    assert compared.status is Status.PASS and len(compared.recomputed) == 1  # idle_before only
    assert left.status is Status.UNAVAILABLE and "active, idle_after" in left.reason
    (none,) = verdicts([])
    assert none.status is Status.UNAVAILABLE and "idle_before, active, idle_after" in none.reason
    (gap,) = verdicts([s for s in trial["power_samples"] if not a0 <= s["time_s"] <= a1])
    assert gap.status is Status.FAIL and "active holds 0 samples" in gap.reason
    tenth = trial["power_samples"][::10]
    assert verdicts(tenth, None)[0].status is Status.FAIL  # 6 idle samples < 10 without the interval
    (sparse,) = verdicts(tenth, 0.5)
    assert sparse.status is Status.PASS and len(sparse.recomputed) == 3


def test_counter_order_fails_a_stamp_or_a_log_read_out_of_order():
    """A trial whose idle window ends above the active window's start, and a log whose counter read starts
    before the previous one ended, each fail their counter_order check (and nothing else here)."""
    from verify.checks import energy, run_nvml  # noqa: PLC0415

    rec = _read(REAL, TRIAL)
    trial = copy.deepcopy(rec["energy"]["trials"][0])
    trial["idle_before"]["end"]["energy_mj"] = trial["active"]["start"]["energy_mj"] + 1
    order = [r for r in energy.check_trial(trial, index=0, repeats=trial["invocations"], subject="s", where="w",
                                           settle_s=2) if r.check_id == "energy.trial.counter_order"]
    assert [r.status for r in order] == [Status.FAIL] and "goes backwards" in order[0].reason
    lines = [json.loads(x) for x in gzip.decompress((REAL / TRIAL_LOG).read_bytes()).decode().splitlines()]
    reads = _counter_reads(lines)
    reads[5]["t_start_s"] = reads[4]["t_end_s"] - 1e-3  # overlaps the read before it
    verdicts = {r.check_id: r for r in run_nvml.check_record_log(rec["energy"], lines, subject="s", where="w",
                                                                  log_rel=TRIAL_LOG)}
    assert verdicts["energy.nvml_log.counter_order"].status is Status.FAIL
    clean = {r.check_id: r for r in run_nvml.check_record_log(
        rec["energy"], [json.loads(x) for x in gzip.decompress((REAL / TRIAL_LOG).read_bytes()).decode().splitlines()],
        subject="s", where="w", log_rel=TRIAL_LOG)}
    assert clean["energy.nvml_log.counter_order"].status is Status.PASS
