"""The profile phase and `rev88 profile`, driven through a fake `ncu` (CPU) and the real one (GPU)."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import stat
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bundle import archive
from bundle import profile as p
from bundle.cli import app
from bundle.jobs import SubprocessEngine
from bundle.phases import profile as phase
from protocol.errors import BundleError
from tests.conftest import RECORDED

HANDWRITTEN = RECORDED / "ncu" / "handwritten-a100-small-task.csv"

# A stand-in for ncu: answers --version and the metric query, and in profile mode behaves
# as FAKE_NCU_MODE says. "ok" writes what ncu and the fixture would (a report file, the
# fixture record with the requested scope) and prints the hand-written raw page.
FAKE_NCU = r'''#!{python}
import gzip, json, os, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.3.1.0 (build 1) (public-release)")
    sys.exit(0)
if args[0] == "--query-metrics":
    print("Device NVIDIA A100-SXM4-40GB (GA100)")
    for name in args[-1].split(","):
        print(name + ".sum   Counter   # of things")
    sys.exit(0)
mode = os.environ.get("FAKE_NCU_MODE", "ok")
assert os.environ.get("CUBLAS_WORKSPACE_CONFIG") in (":4096:8", ":16:8"), "workspace not in the job env"
csv_text = open({csv!r}).read()
if mode == "perm":
    print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
          "Counters on the target device 0.")
    sys.exit(1)
if mode == "rc1":
    print("==PROF== Connected to process 7 (python)")
    print("==ERROR== The application returned an error code (1).", file=sys.stderr)
    sys.exit(1)
if mode == "zero":
    print("==WARNING== No ranges were profiled.")
    sys.exit(0)
if mode == "two":
    quoted = [line for line in csv_text.splitlines() if line.startswith('"')]
    print("\n".join(quoted + [quoted[-1].replace('"0"', '"1"', 1)]))
    sys.exit(0)
export = args[args.index("--export") + 1]
output = args[args.index("--output") + 1]
scope = args[args.index("--scope") + 1]
open(export + ".ncu-rep", "wb").write(b"fake report " + scope.encode())
record = {{"cublas_workspace_config": os.environ["CUBLAS_WORKSPACE_CONFIG"], "gpu": "NVIDIA A100-SXM4-40GB",
          "hardware": {{"l2_cache_bytes": 41943040}},
          "profile": {{"scope": scope, "fresh_training_sequences_in_range": 16 if scope == "task" else 1}},
          "metadata": {{}}}}
open(output, "wb").write(gzip.compress(json.dumps(record).encode()))
open(output[: -len(".json.gz")] + ".predictions.npy", "wb").write(b"npy")
print(csv_text)
'''


@pytest.fixture()
def fake_ncu(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "ncu"
    path.parent.mkdir()
    path.write_text(FAKE_NCU.format(python=sys.executable, csv=str(HANDWRITTEN)))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_plan_is_interleaved_and_needs_three_repeats() -> None:
    runs = phase.plan_runs(3)
    assert [r.name for r in runs[:4]] == ["workspace-4096-8-task-r00", "workspace-4096-8-training-r00",
                                          "workspace-16-8-task-r00", "workspace-16-8-training-r00"]
    assert [r.repeat_index for r in runs] == [0] * 4 + [1] * 4 + [2] * 4
    with pytest.raises(BundleError, match=">= 3"):
        phase.plan_runs(2)


def test_phase_end_to_end_with_fake_ncu(tmp_path: Path, fake_ncu: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    monkeypatch.setattr(p, "import_ncu_report", lambda: (None, "ncu_report withheld by the test"))
    run_dir = tmp_path / "run"
    summary = phase.run_profile(run_dir, engine=SubprocessEngine(), repeats=3, ncu=str(fake_ncu))
    folder = run_dir / "profile"
    assert archive.read_json_gz(folder / "profiles.json.gz") == summary
    assert summary["ncu_version"] == "2025.3.1" and summary["ncu_version_is_pinned"] is False
    assert summary["l2_cache_size_bytes"] == 41943040
    task = summary["profiles"]["workspace-16-8-task"]
    assert task["range_training_sequences"] == 16
    assert task["mean"]["dram_read_bytes_per_sequence"] == 3_255_536.0
    assert task["sample_sd"]["dram_read_bytes_per_sequence"] == 0.0
    training = summary["profiles"]["workspace-4096-8-training"]
    assert training["mean"]["dram_read_bytes_per_sequence"] == 52_088_576.0  # S = 1
    record = archive.read_json_gz(folder / "workspace-16-8-training-r02.json.gz")
    # default: the whole-process lock (no scope variable), two runs started at once
    assert record["env"] == {"CUBLAS_WORKSPACE_CONFIG": ":16:8", "REV88_ENGINE": "native",
                             "REV88_GPU_LOCK": str((run_dir / ".work/profile/gpu-default.lock").resolve())}
    assert summary["placement"]["gpu_lock_scope"] == "process"
    assert summary["placement"]["ncu_runs_started_at_once_per_board"] == 2
    assert record["ncu_report_cross_check"] == {"status": "skipped", "reason": "ncu_report withheld by the test"}
    assert p.audit_profile_command(record["command"]) == []
    # Only repeat 0 keeps its report file (default --keep-reports first); later repeats keep its hash.
    assert record["files"]["ncu_report"]["path"] is None and record["files"]["ncu_report"]["stored"] is False
    assert record["files"]["ncu_report"]["content_sha256"] == hashlib.sha256(b"fake report training").hexdigest()
    # the note says what the skipped cross-check did not do, not that the report was checked
    reason = record["files"]["ncu_report"]["reason"]
    assert "not cross-checked" in reason and "skipped" in reason and "was cross-checked" not in reason
    first = archive.read_json_gz(folder / "workspace-16-8-training-r00.json.gz")
    stored = gzip.decompress((folder / first["files"]["ncu_report"]["path"]).read_bytes())
    assert stored == b"fake report training"
    assert first["files"]["ncu_report"]["content_sha256"] == hashlib.sha256(stored).hexdigest()
    csv_text = gzip.decompress((folder / record["files"]["csv"]["path"]).read_bytes()).decode()
    assert p.parse_raw_csv(csv_text).metric_rows() == record["metric_rows"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert "profile/profiles.json.gz" in {e["path"] for e in manifest["files"]}
    assert not (run_dir / ".work" / "profile").exists()


def _pretend_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI checks for a CUDA device before any work; the fake ncu stands in for the GPU here."""
    from bundle import preflight  # noqa: PLC0415

    monkeypatch.setattr(preflight, "check_cuda", lambda: {"need": "cuda", "ok": True, "detail": "fake ncu test"})


@pytest.mark.parametrize(("mode", "message"), [
    ("perm", "ERR_NVGPUCTRPERM.*NVreg_RestrictProfilingToAdminUsers=0.*--cap-add SYS_ADMIN"),
    ("rc1", "exit status 1 .*application returned an error code"),
    ("zero", "holds 0 range results"),
    ("two", "holds 2 range results, exactly one"),
])
def test_cli_failures_are_one_line(tmp_path: Path, fake_ncu: Path, monkeypatch: pytest.MonkeyPatch,
                                   mode: str, message: str) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", mode)
    _pretend_cuda(monkeypatch)
    result = CliRunner().invoke(app, ["profile", "--out", str(tmp_path / "run"), "--ncu", str(fake_ncu)])
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("rev88: error: "), result.output
    assert re.search(message, lines[0]), lines[0]
    assert not (tmp_path / "run" / "profile").exists()  # no complete-looking phase


def test_cli_reports_missing_ncu_and_bad_repeats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(p.NCU_ENV, raising=False)
    _pretend_cuda(monkeypatch)
    result = CliRunner().invoke(app, ["profile", "--out", str(tmp_path / "run"), "--ncu", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "ncu not found at" in result.output
    result = CliRunner().invoke(app, ["profile", "--out", str(tmp_path / "run"), "--repeats", "2"])
    assert result.exit_code == 2 and "--repeats must be an integer >= 3" in result.output


def test_range_lock_scope_is_opt_in_and_recorded(tmp_path: Path, fake_ncu: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    monkeypatch.setattr(p, "import_ncu_report", lambda: (None, "ncu_report withheld by the test"))
    summary = phase.run_profile(tmp_path / "run", engine=SubprocessEngine(), repeats=3, ncu=str(fake_ncu),
                                lock_scope="range")
    record = archive.read_json_gz(tmp_path / "run" / "profile" / "workspace-4096-8-task-r01.json.gz")
    assert record["env"]["REV88_GPU_LOCK_SCOPE"] == "range"
    assert summary["placement"]["gpu_lock_scope"] == "range"
    assert summary["placement"]["ncu_runs_started_at_once_per_board"] == 12
    assert summary["placement"]["gpu_lock"] == phase.GPU_LOCK_TEXT["range"]
    with pytest.raises(BundleError, match="--lock-scope must be one of process, range"):
        phase.run_profile(tmp_path / "other", engine=SubprocessEngine(), ncu=str(fake_ncu), lock_scope="board")
    _pretend_cuda(monkeypatch)
    result = CliRunner().invoke(app, ["profile", "--out", str(tmp_path / "cli"), "--ncu", str(fake_ncu),
                                      "--lock-scope", "board"])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code != 0 and len(lines) == 1 and "--lock-scope 'board'" in lines[0], result.output


@pytest.mark.gpu
def test_one_real_profile_on_the_gpu(tmp_path: Path) -> None:
    """One real ncu run of the fixture (training scope, :16:8): parsed, cross-checked, stored."""
    try:
        ncu_path = p.find_ncu()
    except BundleError as exc:
        pytest.skip(str(exc))
    workdir = tmp_path / "work"
    workdir.mkdir()
    engine = SubprocessEngine()
    stage = archive.PhaseStage("profile", tmp_path / "stage")
    stage.path.mkdir()
    inputs = phase.write_fixture_inputs(workdir)
    capabilities = phase.record_capabilities(stage, engine=engine, ncu_path=ncu_path, workdir=workdir)
    assert capabilities["ncu_version"]
    run = phase.ProfileRun(":16:8", "training", 0)
    record = phase.profile_once(run, stage, engine=engine, ncu_path=ncu_path, workdir=workdir, inputs=inputs)
    import torch  # noqa: PLC0415

    props = torch.cuda.get_device_properties(0)
    assert record["l2_cache_size_bytes"] == props.L2_cache_size
    assert record["range_training_sequences"] == 1
    assert record["dram_read_bytes_per_sequence"] > 0 and record["l2_read_request_bytes_per_sequence"] > 0
    assert record["ncu_report_cross_check"]["status"] in ("passed", "skipped")
    if p.import_ncu_report()[0] is not None:
        assert record["ncu_report_cross_check"]["status"] == "passed"
    print(json.dumps({k: record[k] for k in record if k.endswith("_per_sequence") or k.startswith("l2_")}, indent=1))


def test_resuming_with_another_learner_is_refused(tmp_path: Path, fake_ncu: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs staged by an interrupted rev88 profile are not mixed into a rev88-fused one."""
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    monkeypatch.setattr(p, "import_ncu_report", lambda: (None, "ncu_report withheld by the test"))
    real_once, calls = phase.profile_once, []

    def interrupted(run, *args, **kwargs):
        calls.append(run.name)
        if len(calls) == 3:
            raise BundleError("interrupted by the test")
        return real_once(run, *args, **kwargs)

    monkeypatch.setattr(phase, "profile_once", interrupted)
    run_dir = tmp_path / "run"
    with pytest.raises(BundleError, match="interrupted by the test"):
        phase.run_profile(run_dir, engine=SubprocessEngine(), repeats=3, ncu=str(fake_ncu), overlap=1)
    monkeypatch.setattr(phase, "profile_once", real_once)
    with pytest.raises(BundleError, match="of learner rev88, not rev88-fused: resume with --learner rev88"):
        phase.run_profile(run_dir, engine=SubprocessEngine(), repeats=3, ncu=str(fake_ncu), learner="rev88-fused")
    # nor with another GPU lock scope: the summary names one scope for every run
    with pytest.raises(BundleError, match="made with --lock-scope process, not range: resume with --lock-scope process"):
        phase.run_profile(run_dir, engine=SubprocessEngine(), repeats=3, ncu=str(fake_ncu), lock_scope="range")


def test_stored_reports_do_not_hold_up_the_next_run(tmp_path: Path, fake_ncu: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that keeps its .ncu-rep stores it on its own thread: with one run at a time the next
    ncu run starts before that store ends, and the summary still waits for every record."""
    import threading  # noqa: PLC0415
    import time  # noqa: PLC0415

    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    monkeypatch.setattr(p, "import_ncu_report", lambda: (None, "ncu_report withheld by the test"))
    events: list[tuple[str, str, float]] = []
    real_store, real_run = phase._store_run, SubprocessEngine.run
    release = threading.Event()

    def slow_store(run, *args, **kwargs):
        if run.name == "workspace-4096-8-task-r00":
            assert release.wait(600), "no later run started while this store was held"  # held until then
        record = real_store(run, *args, **kwargs)
        events.append(("stored", run.name, time.monotonic()))
        return record

    def noting_run(self, spec, **kwargs):
        events.append(("ncu", spec.name.split("/")[-1], time.monotonic()))
        if spec.name.endswith("workspace-16-8-task-r00"):
            release.set()
        return real_run(self, spec, **kwargs)

    monkeypatch.setattr(phase, "_store_run", slow_store)
    monkeypatch.setattr(SubprocessEngine, "run", noting_run)
    run_dir = tmp_path / "run"
    summary = phase.run_profile(run_dir, engine=SubprocessEngine(), repeats=3, ncu=str(fake_ncu), overlap=1)
    order = [(kind, name) for kind, name, _ in events]
    first_stored = order.index(("stored", "workspace-4096-8-task-r00"))
    assert order.index(("ncu", "workspace-16-8-task-r00")) < first_stored
    assert len(summary["profiles"]) == 4 and all(("stored", r.name) in order for r in phase.plan_runs(3))
    first = archive.read_json_gz(run_dir / "profile" / "workspace-4096-8-task-r00.json.gz")
    assert gzip.decompress((run_dir / "profile" / first["files"]["ncu_report"]["path"]).read_bytes()) == b"fake report task"


def test_a_failed_background_store_fails_the_phase(tmp_path: Path, fake_ncu: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A store that fails on its thread fails the phase with its own line; no summary is written; the
    runs that start after the failure has landed are not started (the next repeat's runs wait for it
    to land, so the test follows events, not speed)."""
    import threading  # noqa: PLC0415

    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    monkeypatch.setattr(p, "import_ncu_report", lambda: (None, "ncu_report withheld by the test"))
    real_store = phase._store_run
    failing: list[threading.Thread] = []
    raised = threading.Event()

    def failing_store(run, *args, **kwargs):
        if run.name == "workspace-16-8-training-r00":
            failing.append(threading.current_thread())
            raised.set()
            raise BundleError("disk full (the test)")
        return real_store(run, *args, **kwargs)

    started, real_run = [], SubprocessEngine.run

    def counting_run(self, spec, **kwargs):
        started.append(spec.name)
        if "/workspace-" in spec.name and not spec.name.endswith("-r00"):  # a later repeat: after the failure landed
            assert raised.wait(600), "the failing store never ran"  # the wait only stops a hang
            failing[0].join(600)
        return real_run(self, spec, **kwargs)

    monkeypatch.setattr(phase, "_store_run", failing_store)
    monkeypatch.setattr(SubprocessEngine, "run", counting_run)
    run_dir = tmp_path / "run"
    with pytest.raises(BundleError, match=r"disk full \(the test\)"):
        phase.run_profile(run_dir, engine=SubprocessEngine(), repeats=3, ncu=str(fake_ncu))
    assert not (run_dir / "profile" / "profiles.json.gz").exists()
    ncu_runs = [name for name in started if "/workspace-" in name]
    assert len(ncu_runs) <= 6  # the runs not yet started when the store failed were not started (of 12)
    staged = run_dir / ".staging" / "profile"
    for name in ("workspace-4096-8-task-r00", "workspace-4096-8-training-r00", "workspace-16-8-task-r00"):
        assert (staged / f"{name}.json.gz").is_file(), name  # stores that had started landed before the raise


def test_an_interrupt_lets_a_finished_runs_store_land(tmp_path: Path, fake_ncu: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while a finished run's .ncu-rep is still being stored on its thread: the phase waits
    for that store (its record lands in the staging folder, so the resume keeps the run), then
    re-raises; the summary is not written."""
    import threading  # noqa: PLC0415
    import time  # noqa: PLC0415

    from tests.conftest import interrupted_when  # noqa: PLC0415

    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    monkeypatch.setattr(p, "import_ncu_report", lambda: (None, "ncu_report withheld by the test"))
    real_store = phase._store_run
    storing = threading.Event()

    def slow_store(run, *args, **kwargs):
        if run.name == "workspace-4096-8-task-r00":
            storing.set()
            time.sleep(3.0)  # still storing when the interrupt arrives
        return real_store(run, *args, **kwargs)

    monkeypatch.setattr(phase, "_store_run", slow_store)
    run_dir = tmp_path / "run"
    interrupted_when(storing.is_set, lambda: phase.run_profile(run_dir, engine=SubprocessEngine(), repeats=3,
                                                               ncu=str(fake_ncu), overlap=1), timeout_s=600)
    staged = run_dir / ".staging" / "profile"
    assert (staged / "workspace-4096-8-task-r00.json.gz").is_file()  # landed before the raise
    assert not (run_dir / "profile").exists()
