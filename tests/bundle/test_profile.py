"""bundle.profile: ncu command lines, raw-page parsing, normalisation, report cross-check."""

from __future__ import annotations

import gzip
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bundle import profile as p
from protocol.errors import BundleError
from tests.conftest import ORIGINAL_ARCHIVE, RECORDED, REPO_ROOT

CACHE_AUDIT = ORIGINAL_ARCHIVE / "cache-audit"
SUMMARY = json.loads((CACHE_AUDIT / "summary.json").read_text())
ORIGINAL_PROFILES = SUMMARY["profiles"]
NCU_DIR = RECORDED / "ncu"
RECORDED_CSVS = sorted(NCU_DIR.glob("*.csv"))
FIGURE_KEYS = ("range_training_sequences", "dram_read_bytes_per_sequence", "dram_write_bytes_per_sequence",
               "dram_total_bytes_per_sequence", "l2_read_request_bytes_per_sequence",
               "l2_write_request_bytes_per_sequence", "l2_sector_hit_rate_percent", "counter_unit")
HANDWRITTEN = NCU_DIR / "handwritten-a100-small-task.csv"


def _expected(csv_path: Path) -> dict:
    path = csv_path.with_suffix(".expected.json")
    return json.loads(path.read_text()) if path.is_file() else {}


# --- normalisation reproduces the original's figures ---------------------------------------
@pytest.mark.parametrize("key", sorted(ORIGINAL_PROFILES))
def test_original_metric_rows_normalise_to_the_recorded_figures(key: str) -> None:
    original = ORIGINAL_PROFILES[key]
    scope = original["scope"]
    figures = p.normalise_counters(original["metric_rows"], original["range_training_sequences"], scope)
    assert list(figures) == list(FIGURE_KEYS)
    for field in FIGURE_KEYS:
        assert figures[field] == original[field], field  # exact, including float bits
    assert original["range_training_sequences"] == p.SEQUENCES_IN_RANGE[scope]


def test_small_workspace_task_figures_are_the_spec_numbers() -> None:
    figures = p.normalise_counters(ORIGINAL_PROFILES["profile-small-task"]["metric_rows"], 16, "task")
    assert figures["dram_read_bytes_per_sequence"] == 3_255_536
    assert figures["l2_read_request_bytes_per_sequence"] == 859_619_420


def test_normalise_rejects_an_inconsistent_recorded_value() -> None:
    rows = json.loads(json.dumps(ORIGINAL_PROFILES["profile-small-task"]["metric_rows"]))
    rows[p.DRAM_READ]["value"] += 1.0
    with pytest.raises(BundleError, match="inconsistent"):
        p.normalise_counters(rows, 16, "task")
    with pytest.raises(BundleError, match="positive integer"):
        p.normalise_counters(ORIGINAL_PROFILES["profile-small-task"]["metric_rows"], 0)


# --- recorded CSVs (hand-written layout check + real H200 recordings) ---------------------
@pytest.mark.parametrize("csv_path", RECORDED_CSVS, ids=[c.name for c in RECORDED_CSVS])
def test_recorded_csv_parses_to_one_range(csv_path: Path) -> None:
    expected = _expected(csv_path)
    limit = expected.get("hit_rate_limit_percent", p.HIT_RATE_MAX_PERCENT)  # strict unless stated
    text = csv_path.read_text()
    rows = p.parse_raw_csv(text, hit_rate_limit_percent=limit)
    assert rows.range_name == p.RANGE_KERNEL_NAME
    assert list(rows.metrics) == list(p.NCU_METRICS)
    assert rows.display_name
    assert rows.l2_cache_size_bytes and rows.l2_cache_size_bytes > 0
    assert p.replay_pass_counts(rows, text) and p.replay_pass_counts(rows, text)[0] >= 1
    for name in p.INTEGER_METRICS[:4]:
        assert rows.metrics[name].value.is_integer()
    figures = p.normalise_counters(rows, expected.get("sequences", 1))
    assert figures["dram_total_bytes_per_sequence"] == pytest.approx(
        figures["dram_read_bytes_per_sequence"] + figures["dram_write_bytes_per_sequence"], rel=1e-15)
    original_key = expected.get("original_profile")
    if original_key:
        original = ORIGINAL_PROFILES[original_key]
        assert rows.metric_rows() == original["metric_rows"]
        assert rows.device_attributes == original["profile_device_attributes"]
        figures = p.normalise_counters(rows, expected["sequences"], expected["scope"])
        assert all(figures[k] == original[k] for k in FIGURE_KEYS)


REPORTED_CSVS = [c for c in RECORDED_CSVS if c.with_suffix(".ncu-rep.gz").is_file()]


def test_real_h200_recordings_are_present() -> None:
    assert {c.name for c in REPORTED_CSVS} >= {"h200-tiny-matmul.csv", "h200-fixture-training-16-8.csv"}


@pytest.mark.parametrize("csv_path", REPORTED_CSVS, ids=[c.name for c in REPORTED_CSVS])
def test_recorded_report_agrees_with_its_csv(csv_path: Path, tmp_path: Path) -> None:
    report_gz = csv_path.with_suffix(".ncu-rep.gz")
    module, reason = p.import_ncu_report()
    if module is None:
        pytest.skip(reason)
    report = tmp_path / "report.ncu-rep"
    report.write_bytes(gzip.decompress(report_gz.read_bytes()))
    rows = p.parse_raw_csv(csv_path.read_text(), hit_rate_limit_percent=None)
    check = p.cross_check_report(rows, report)
    assert check["status"] == "passed"
    assert check["action_name"] == p.RANGE_KERNEL_NAME
    assert set(p.NCU_METRICS) <= set(check["metrics"])
    # A report that disagrees with the CSV in one counter is an error, not a pass.
    values = p.read_report_values(module, report)
    values["values"][p.DRAM_WRITE] = values["values"][p.DRAM_WRITE] + 32.0
    with pytest.raises(BundleError, match="disagree on dram__bytes_write.sum"):
        p.compare_report_values(rows, values)


def test_h200_hit_rate_above_100_is_refused_by_the_original_bound() -> None:
    h200 = NCU_DIR / "h200-tiny-matmul.csv"
    if not h200.is_file():
        pytest.skip("no H200 recording")
    with pytest.raises(BundleError, match="above 100 %"):
        p.parse_raw_csv(h200.read_text(), hit_rate_limit_percent=p.HIT_RATE_MAX_PERCENT)
    assert p.parse_raw_csv(h200.read_text()).metrics[p.L2_HIT_RATE].value == 100.24  # kept by default


def test_cross_check_is_skipped_not_passed_without_ncu_report(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # makes `import ncu_report` fail
    rows = p.parse_raw_csv(HANDWRITTEN.read_text())
    check = p.cross_check_report(rows, tmp_path / "absent.ncu-rep")
    assert check["status"] == "skipped"
    assert "ncu_report is not importable" in check["reason"]


def test_float_tolerance_is_the_printed_resolution() -> None:
    rows = p.parse_raw_csv(HANDWRITTEN.read_text())
    ok = p.compare_report_values(rows, {"values": {p.L2_HIT_RATE: 95.4549, p.DRAM_READ: 52088576.0}})
    assert ok[p.L2_HIT_RATE]["tolerance"] == pytest.approx(0.005)
    with pytest.raises(BundleError, match="disagree"):
        p.compare_report_values(rows, {"values": {p.L2_HIT_RATE: 95.4551}})
    with pytest.raises(BundleError, match="disagree"):
        p.compare_report_values(rows, {"values": {p.DRAM_READ: 52088576.5}})


# --- strict parsing -------------------------------------------------------------------------
def _csv_parts() -> tuple[list[str], list[str], list[str]]:
    header, units, row = p.csv_lines(HANDWRITTEN.read_text())
    return [header], [units], [row]


def test_two_ranges_are_an_error() -> None:
    header, units, row = _csv_parts()
    second = [row[0].replace('"0","4242"', '"1","4242"', 1)]
    with pytest.raises(BundleError, match="holds 2 range results, exactly one"):
        p.parse_raw_csv("\n".join(header + units + row + second))


def test_zero_ranges_are_an_error() -> None:
    header, units, _ = _csv_parts()
    with pytest.raises(BundleError, match="holds 0 range results"):
        p.parse_raw_csv("\n".join(header + units))
    with pytest.raises(BundleError, match="holds 0 range results"):
        p.parse_raw_csv("==PROF== Disconnected from process 1\n==WARNING== No ranges were profiled.\n")


@pytest.mark.parametrize(("old", "new", "message"), [
    ('"byte","byte","ns"', '"byte","bytes","ns"', "unknown unit 'bytes'"),
    ('"52088576"', '"-52088576"', "finite non-negative"),
    ('"52088576"', '"nan"', "finite non-negative"),
    ('"52088576"', '"n/a"', "not a number"),
    ('"95.45"', '"100.5"', "above 100 %"),
    ('"range"', '"volta_sgemm_128x64_nn"', "not 'range'"),
    ('"dram__bytes_write.sum"', '"dram__bytes_written.sum"', "dram__bytes_write.sum is missing"),
    ('"dram__bytes_write.sum"', '"dram__bytes_read.sum"', "repeats a column"),
])
def test_malformed_csv_is_rejected(old: str, new: str, message: str) -> None:
    text = HANDWRITTEN.read_text()
    assert old in text
    with pytest.raises(BundleError, match=message):
        p.parse_raw_csv(text.replace(old, new, 1), hit_rate_limit_percent=p.HIT_RATE_MAX_PERCENT)


def test_row_of_another_width_is_rejected() -> None:
    header, units, row = _csv_parts()
    with pytest.raises(BundleError, match="cells, the header"):
        p.parse_raw_csv("\n".join(header + units + [row[0] + ',"extra"']))


def test_thousands_separators_are_removed() -> None:
    text = HANDWRITTEN.read_text().replace('"52088576"', '"52,088,576"')
    rows = p.parse_raw_csv(text)
    assert rows.metrics[p.DRAM_READ].value == 52_088_576.0
    assert rows.metrics[p.DRAM_READ].raw_value == "52,088,576"


# --- command lines and capabilities ---------------------------------------------------------
def test_profile_command_has_the_required_flags_and_base_units() -> None:
    argv = p.profile_argv("/opt/ncu", "/w/run", p.fixture_argv("/w/in.npz", "/w/c.json", "/w/o.json.gz", "task"))
    assert p.audit_profile_command(argv) == []
    assert ("--print-units", "base") in set(zip(argv, argv[1:], strict=False))
    assert argv[argv.index("--export") + 1] == "/w/run"
    assert argv[-4:] == ("--scope", "task", "--repeats", "16")
    assert "{python}" in argv


def test_audit_against_the_original_commands() -> None:
    assert p.audit_profile_command(ORIGINAL_PROFILES["profile-small-task"]["command"]) == []
    attempt = json.loads((CACHE_AUDIT / "development" / "profile-attempt1" / "profile-small-task.json").read_text())
    assert p.audit_profile_command(attempt["command"]) == ["forbidden --profile-from-start"]


def test_version_and_metric_query() -> None:
    version_text = ORIGINAL_PROFILES["profile-small-task"]["capabilities"]["ncu_version"]
    assert p.parse_ncu_version(version_text) == p.PINNED_NCU_VERSION
    assert p.query_argv("ncu")[-1] == "dram__bytes_read,dram__bytes_write,lts__t_sectors_op_read," \
                                       "lts__t_sectors_op_write,lts__t_sector_hit_rate"
    attempt = json.loads((CACHE_AUDIT / "development" / "profile-attempt1" / "profile-small-task.json").read_text())
    query = attempt["capabilities"]["metric_query"]
    with pytest.raises(BundleError, match="does not list dram__bytes_read"):
        p.check_metric_query(query["returncode"], query["stdout"] + query["stderr"])
    p.check_metric_query(0, "\n".join(f"{m}.sum  Counter  byte" for m in p.QUERY_METRICS))


def test_original_attempt_failure_becomes_one_line() -> None:
    attempt = json.loads((CACHE_AUDIT / "development" / "profile-attempt1" / "profile-small-task.json").read_text())
    with pytest.raises(BundleError, match="exit status 1 .*profile-from-start is not supported") as err:
        p.check_ncu_exit("profile", attempt["returncode"], attempt["stdout"] + attempt["stderr"])
    assert "\n" not in str(err.value)


def test_permission_error_says_what_to_change() -> None:
    text = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
            "Counters on the target device 0.\n")
    with pytest.raises(BundleError) as err:
        p.check_ncu_exit("profile x", 0, text)
    assert err.value.exit_code == 3
    assert "NVreg_RestrictProfilingToAdminUsers=0" in str(err.value)
    assert "--cap-add SYS_ADMIN" in str(err.value)


def test_summarise_repeats_uses_sample_sd() -> None:
    stats = p.summarise_repeats([{"a": 1.0, "u": "x"}, {"a": 2.0, "u": "x"}, {"a": 3.0, "u": "x"}])
    assert stats == {"mean": {"a": 2.0}, "sample_sd": {"a": 1.0}}
    with pytest.raises(BundleError):
        p.summarise_repeats([{"a": 1.0}])


# --- finding ncu ----------------------------------------------------------------------------
def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_find_ncu_order_and_failure(tmp_path: Path) -> None:
    empty = {"PATH": str(tmp_path / "nobin")}
    where = {"install_glob": str(tmp_path / "opt" / "*" / "ncu"), "cuda_path": str(tmp_path / "cuda" / "ncu")}
    with pytest.raises(BundleError) as err:
        p.find_ncu(None, environ=empty, **where)
    for place in ("--ncu", "REV88_NCU", "PATH", where["install_glob"], where["cuda_path"]):
        assert place in str(err.value)
    _executable(tmp_path / "opt" / "2025.1.1" / "ncu")
    newest = _executable(tmp_path / "opt" / "2025.10.0" / "ncu")
    assert p.find_ncu(None, environ=empty, **where) == str(newest)
    on_path = _executable(tmp_path / "bin" / "ncu")
    assert p.find_ncu(None, environ={"PATH": str(on_path.parent)}, **where) == str(on_path)
    given = _executable(tmp_path / "given" / "ncu")
    assert p.find_ncu(None, environ={**empty, p.NCU_ENV: str(given)}, **where) == str(given)
    assert p.find_ncu(str(given), environ=empty, **where) == str(given)
    with pytest.raises(BundleError, match="given by --ncu"):
        p.find_ncu(str(tmp_path / "missing"), environ=empty, **where)


def test_module_does_not_import_torch() -> None:
    code = "import sys, bundle.profile, bundle.commands.profile; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT,
                   env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
