"""Every phase and `reproduce` refuse at once, in one line, and leave the run folder as it was.

The CUDA refusals are real on this CPU-only machine (torch 2.13.0+cpu); the NVML one is real
wherever libnvidia-ml is absent; the ncu one hides any installed ncu; the docker one points
DOCKER_HOST at a socket that does not exist (the "cannot reach docker" path, whether or not a
dockerd runs here). The CPU diagnostic paths keep working.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bundle import preflight
from bundle.cli import app
from bundle.commands.qualify import verdict_lines
from bundle.jobs import SubprocessEngine
from protocol.errors import BundleError
from tests.conftest import one_line_error as _one_line

runner = CliRunner()
CUDA_SEEN = preflight.check_cuda()["ok"]
needs_no_cuda = pytest.mark.skipif(CUDA_SEEN, reason="this host has a CUDA device: the refusal cannot happen")


def _untouched(run_dir: Path, existed: bool) -> None:
    if existed:
        assert sorted(p.name for p in run_dir.iterdir()) == [], list(run_dir.rglob("*"))
    else:  # nor the parent folder that was made for it (out/ of make's out/run-local)
        assert not run_dir.parent.exists(), list(run_dir.parent.rglob("*"))


@needs_no_cuda
@pytest.mark.parametrize("existed", [False, True])
@pytest.mark.parametrize("args", [
    ["validate"], ["compare"], ["qualify", "--device", "cuda"], ["energy"], ["profile"], ["reproduce"],
    ["reproduce", "--phases", "qualify"], ["validate", "--device", "cuda", "--engine", "native"],
])
def test_no_cuda_is_one_line_and_writes_nothing(tmp_path, args, existed):
    run_dir = tmp_path / "out" / "run-local"  # as make's RUN_DIR: out/ is made for it
    if existed:
        run_dir.mkdir(parents=True)
    res = runner.invoke(app, [*args, "--out", str(run_dir)])
    line = _one_line(res, "no CUDA device on this host", "nothing was written", "docs/gpu-hosts.md")
    assert ("--device cpu" in line) == (args[0] in ("validate", "compare", "qualify") or args[-1] == "qualify")
    _untouched(run_dir, existed)


@needs_no_cuda
def test_qualify_cuda_on_a_complete_folder_names_the_missing_gpu_first(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "qualify").mkdir(parents=True)
    res = runner.invoke(app, ["qualify", "--device", "cuda", "--out", str(run_dir)])
    line = _one_line(res, "no CUDA device")
    assert "already complete" not in line
    assert sorted(p.name for p in run_dir.iterdir()) == ["qualify"]


def _cuda_ok(monkeypatch) -> None:
    monkeypatch.setattr(preflight, "check_cuda", lambda: {"need": "cuda", "ok": True, "detail": "pretended"})


def test_no_ncu_is_one_line_and_writes_nothing(tmp_path, monkeypatch):
    _cuda_ok(monkeypatch)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv("REV88_NCU", raising=False)
    import bundle.profile as counters

    # also hide the usual install folders (/opt/nvidia/nsight-compute/*/ncu, /usr/local/cuda/bin/ncu)
    monkeypatch.setattr(counters.find_ncu, "__kwdefaults__", {
        **counters.find_ncu.__kwdefaults__, "install_glob": str(tmp_path / "none" / "*" / "ncu"),
        "cuda_path": str(tmp_path / "none" / "ncu")})
    run_dir = tmp_path / "out" / "run-local"  # as make's RUN_DIR: out/ is made for it
    _one_line(runner.invoke(app, ["profile", "--out", str(run_dir)]), "Nsight Compute (ncu) not found on this host",
              "pass --ncu PATH", "nothing was written")
    _untouched(run_dir, existed=False)
    _one_line(runner.invoke(app, ["profile", "--out", str(run_dir), "--ncu", str(tmp_path / "no-ncu")]),
              "ncu not found at", "(given by --ncu)")
    _untouched(run_dir, existed=False)


def test_no_nvml_is_one_line_and_writes_nothing(tmp_path, monkeypatch):
    if preflight.check_nvml()["ok"]:
        pytest.skip("NVML works on this host: the refusal cannot happen")
    _cuda_ok(monkeypatch)
    run_dir = tmp_path / "out" / "run-local"  # as make's RUN_DIR: out/ is made for it
    _one_line(runner.invoke(app, ["energy", "--out", str(run_dir)]), "NVML is not usable on this host",
              "nvidia-ml-py", "nothing was written")
    _untouched(run_dir, existed=False)


def test_restricted_counters_are_refused_unless_root(tmp_path):
    params = tmp_path / "params"
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n")
    refused = preflight.check_counters(params, euid=1000)
    assert not refused["ok"] and "RmProfilingAdminOnly: 1" in refused["detail"]
    assert preflight.check_counters(params, euid=0)["ok"]
    params.write_text("RmProfilingAdminOnly: 0\n")
    assert preflight.check_counters(params, euid=1000)["ok"]
    assert preflight.check_counters(tmp_path / "absent", euid=1000)["ok"]  # unknown: ncu itself will tell
    with pytest.raises(BundleError) as info:
        preflight.raise_first_failure([refused], command="rev88 profile", where="on this host")
    message = str(info.value)
    assert "GPU performance counters are restricted to admin users on this host" in message
    assert "NVreg_RestrictProfilingToAdminUsers=0" in message and "\n" not in message


@pytest.mark.parametrize("args", [
    ["reproduce", "--engine", "docker", "--device", "cpu", "--phases", "qualify"],
    ["reproduce", "--engine", "docker"],
    ["compare", "--engine", "docker", "--device", "cpu"],
    ["validate", "--engine", "docker"],
])
def test_unreachable_docker_is_one_line_and_writes_nothing(tmp_path, monkeypatch, args):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-docker.sock'}")
    run_dir = tmp_path / "out" / "run-local"  # as make's RUN_DIR: out/ is made for it
    res = runner.invoke(app, [*args, "--out", str(run_dir)])
    line = _one_line(res)
    assert "cannot reach the Docker daemon" in line or "Docker SDK is not installed" in line, line
    _untouched(run_dir, existed=False)


@pytest.mark.parametrize("phases", ["energy", "profile", "qualify,energy"])
def test_gpu_only_phases_on_the_cpu_are_refused_before_anything(tmp_path, phases):
    run_dir = tmp_path / "out" / "run-local"  # as make's RUN_DIR: out/ is made for it
    line = _one_line(runner.invoke(app, ["reproduce", "--device", "cpu", "--phases", phases, "--out", str(run_dir)]),
                     "no --device cpu path", "--device cuda")
    assert "reproduce:" not in line
    _untouched(run_dir, existed=False)


def test_probe_job_reports_what_the_jobs_will_see(tmp_path):
    record = preflight.probe_engine(SubprocessEngine(), (), command="test", run_dir=tmp_path, gpu=False)
    assert record["checks"] == [] and record["software"]["torch"] and isinstance(record["hardware"], dict)
    assert list(tmp_path.iterdir()) == []
    if not CUDA_SEEN:
        with pytest.raises(BundleError, match=r"^no CUDA device on this host \(torch .*; test\): "):
            preflight.probe_engine(SubprocessEngine(), ("cuda",), command="test", run_dir=tmp_path, gpu=True)


def test_probe_without_the_bundle_is_one_line(tmp_path):
    engine = SubprocessEngine(python=sys.executable + "-missing")
    with pytest.raises(BundleError, match="cannot start job preflight/probe"):
        preflight.probe_engine(engine, (), command="test", run_dir=tmp_path, gpu=False)


def test_needs_follow_the_phases_and_the_device():
    assert preflight.needs_for(["qualify"], "cpu") == ()
    assert preflight.needs_for(["validate", "compare", "qualify"], "cpu") == ()
    assert preflight.needs_for(["compare"], "cuda") == ("cuda",)
    assert preflight.needs_for(["profile", "energy"], "cuda") == ("cuda", "nvml", "ncu", "counters")
    with pytest.raises(BundleError, match="not supported"):
        preflight.needs_for(["qualify"], "tpu")


def _accuracy(draws: list[int], correct: int) -> dict:
    return {"draws": draws, "complete_protocol": draws == list(range(11)), "correct": correct,
            "total": 10_000 * len(draws), "accuracy_percent": correct / (100 * len(draws)),
            "required_correct": 8_800 * len(draws), "meets_12_percent_error_target": correct >= 8_800 * len(draws)}


def test_a_partial_qualification_gets_no_verdict():
    partial = " ".join(verdict_lines(_accuracy([0, 1, 2], 26_750), all_equal=True))
    assert "26,750 / 30,000 correct (89.17 %) on 3 of 11 draws (0, 1, 2)" in partial
    assert "meets" not in partial and "misses" not in partial and "no verdict" in partial
    full = " ".join(verdict_lines(_accuracy(list(range(11)), 98_208), all_equal=True))
    assert "98,208 / 110,000 correct (89.28 %): meets the 12 % error target (needs 96,800)" in full


def test_cpu_qualification_of_one_draw_runs_and_prints_no_verdict(tmp_path):
    res = runner.invoke(app, ["qualify", "--device", "cpu", "--draws", "0", "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "8,887 / 10,000 correct (88.87 %) on 1 of 11 draws (0)" in text and "no verdict" in text
    assert "meets the 12 %" not in text and (tmp_path / "run" / "qualify" / "accuracy.json.gz").is_file()


@pytest.mark.parametrize("staged_before", [False, True])
def test_a_bad_raw_dir_leaves_no_staging_folder(tmp_path, staged_before):
    """A phase that fails before it staged anything (here: the raw MNIST files are not where --raw-dir
    says) removes the folders it made for that; a staging folder of an earlier attempt stays."""
    run_dir = tmp_path / "out" / "run-local"
    if staged_before:
        (run_dir / ".staging" / "qualify").mkdir(parents=True)
    res = runner.invoke(app, ["qualify", "--device", "cpu", "--draws", "0", "--raw-dir", str(tmp_path / "no-mnist"),
                              "--out", str(run_dir)])
    _one_line(res, "MNIST raw file missing", str(tmp_path / "no-mnist"))
    if staged_before:
        assert sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*")) == [".staging", ".staging/qualify"]
    else:
        _untouched(run_dir, existed=False)


@pytest.mark.parametrize(("phases", "named"), [
    ("validat,qualify", "unknown phase 'validat'"), ("qualify,foo,bar", "unknown phases 'foo', 'bar'"),
    ("qualify,qualify", "'qualify' named twice"), (",", "no phase named"),
])
def test_a_wrong_phase_is_named_with_the_valid_ones(tmp_path, phases, named):
    run_dir = tmp_path / "out" / "run-local"
    line = _one_line(runner.invoke(app, ["reproduce", "--phases", phases, "--out", str(run_dir)]), named,
                     "the phases are validate,compare,qualify,energy,profile")
    assert line.startswith(f"rev88: error: invalid --phases '{phases if phases != ',' else '(empty)'}'"), line
    _untouched(run_dir, existed=False)
