"""Tests for the qualify phase and `rev88 qualify` (real draws, real learner, CPU)."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from typer.testing import CliRunner

from bundle import archive
from bundle.cli import app
from bundle.phases import qualify
from protocol.data import array_sha256
from protocol.errors import BundleError
from tests.conftest import ORIGINAL_ARCHIVE, interrupted_when

runner = CliRunner()
FROZEN_ACCURACY = json.loads((ORIGINAL_ARCHIVE / "accuracy.json").read_text())


def test_parse_draws():
    assert qualify.parse_draws("0-10") == list(range(11))
    assert qualify.parse_draws("4") == [4]
    assert qualify.parse_draws("3, 0,1-2") == [0, 1, 2, 3]
    for bad in ("11", "a", "0-12", "-1", ""):
        with pytest.raises(BundleError):
            qualify.parse_draws(bad)


def test_bad_cli_options_give_one_line(tmp_path):
    for args in (["--draws", "12"], ["--device", "tpu", "--draws", "0"]):
        result = runner.invoke(app, ["qualify", "--out", str(tmp_path / "run"), *args])
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("rev88: error: ")


def test_protocol_constants_agree_with_the_learner():
    from bundle import learner

    assert qualify.PROTOCOL_CONFIG == learner.FROZEN_CONFIG
    assert list(qualify.PROTOCOL_CONFIG) == list(learner.FROZEN_CONFIG)
    assert qualify.STATE_HASH_KEYS == learner.STATE_HASH_KEYS


class _FailOn:
    """Wraps the real runner; raises on one draw (a crash in the middle of the phase)."""

    def __init__(self, fail_on: int) -> None:
        self.inner = qualify.InProcessRunner("cpu")
        self.fail_on = fail_on
        self.calls: list[int] = []

    def __call__(self, draw_index, inputs):
        self.calls.append(draw_index)
        if draw_index == self.fail_on:
            raise BundleError("simulated crash")
        return self.inner(draw_index, inputs)


class _Perturbed(qualify.InProcessRunner):
    """The real runner, but one prediction is changed afterwards (a non-reproducing learner)."""

    def __call__(self, draw_index, inputs):
        predictions, metadata, extra = super().__call__(draw_index, inputs)
        predictions[0] = (predictions[0] + 1) % 10
        return predictions, {**metadata, "predictions_sha256": array_sha256(predictions)}, extra


def test_resume_scoring_and_mismatch_detection(tmp_path):
    run_dir = tmp_path / "run"
    crashing = _FailOn(1)
    with pytest.raises(BundleError, match="simulated crash"):
        qualify.run_qualification(run_dir, draws=[0, 1], runner=crashing)
    staging = run_dir / ".staging" / "qualify"
    assert (staging / "draw-00.json.gz").is_file() and not (staging / "accuracy.json.gz").exists()
    assert not (run_dir / "qualify").exists()

    statuses: list[tuple[int, str]] = []
    result = qualify.run_qualification(run_dir, draws=[0, 1], device="cpu",
                                       on_draw=lambda i, s: statuses.append((i, s)))
    assert statuses == [(0, "resumed"), (1, "start"), (1, "done")]
    assert result["all_predictions_equal_frozen"]
    accuracy = archive.read_json_gz(run_dir / "qualify" / "accuracy.json.gz")
    assert [r["correct"] for r in accuracy["rows"]] == [8887, 8916]
    assert accuracy["required_correct"] == 17600 and not accuracy["complete_protocol"]
    assert np.array(accuracy["rows"][0]["confusion_matrix"]).sum() == 10000
    manifest = archive.RunArchive(run_dir).read_manifest()
    assert "qualify/accuracy.json.gz" in [f["path"] for f in manifest["files"]]

    other = qualify.run_qualification(tmp_path / "other", draws=[0], runner=_Perturbed("cpu"))
    record = other["records"][0]
    assert not other["all_predictions_equal_frozen"]
    assert not record["frozen_comparison"]["predictions_sha256_equal"]
    assert record["frozen_comparison"]["initial_parameter_sha256_equal"]


def test_scorer_refuses_missing_predictions(tmp_path):
    with pytest.raises(BundleError, match="predictions missing"):
        qualify.score_predictions(tmp_path, [0])
    np.save(tmp_path / "draw-00.predictions.npy", np.zeros(10000, dtype=np.int32))
    with pytest.raises(BundleError, match="not int64"):
        qualify.score_predictions(tmp_path, [0])


@pytest.mark.slow
def test_full_cpu_qualification_reproduces_the_frozen_predictions(tmp_path):
    started = time.perf_counter()
    result = runner.invoke(app, ["qualify", "--device", "cpu", "--out", str(tmp_path / "run")])
    seconds = time.perf_counter() - started
    print(f"CPU qualification of 11 draws: {seconds:.1f} s wall")
    assert result.exit_code == 0, result.output
    folder = tmp_path / "run" / "qualify"
    accuracy = archive.read_json_gz(folder / "accuracy.json.gz")
    assert accuracy["correct"] == FROZEN_ACCURACY["correct"] == 98208
    assert accuracy["sample_sd_pp"] == pytest.approx(FROZEN_ACCURACY["sample_sd_pp"], rel=1e-12)
    assert accuracy["error_percent"] == FROZEN_ACCURACY["error_percent"]
    assert accuracy["meets_12_percent_error_target"] and accuracy["frozen_comparison"]["correct_equal"]
    for i in range(11):
        frozen = json.loads((ORIGINAL_ARCHIVE / "results" / f"draw-{i:02d}.json").read_text())["metadata"]
        record = archive.read_json_gz(folder / f"draw-{i:02d}.json.gz")
        predictions = np.load(folder / f"draw-{i:02d}.predictions.npy", allow_pickle=False)
        assert array_sha256(predictions) == record["predictions_sha256"] == frozen["predictions_sha256"]
        assert record["initial_parameter_sha256"] == frozen["initial_parameter_sha256"]
        assert record["epoch_permutation_sha256"] == frozen["epoch_permutation_sha256"]
        assert all(v for k, v in record["frozen_comparison"].items() if k.endswith("_equal") and k != "input_hashes_equal")
        assert accuracy["rows"][i]["test_labels_sha256"] == FROZEN_ACCURACY["rows"][i]["test_labels_sha256"]
    again = runner.invoke(app, ["qualify", "--device", "cpu", "--out", str(tmp_path / "run")])
    assert again.exit_code == 2 and "already complete" in again.stderr
    # The archive the command wrote passes the offline verifier (and nothing is left unlisted).
    verified = runner.invoke(app, ["verify", str(tmp_path / "run")])
    assert verified.exit_code == 0, verified.output
    assert " 0 FAIL" in verified.output


@pytest.mark.gpu
def test_cuda_qualification_of_draw0(tmp_path):
    result = qualify.run_qualification(tmp_path / "run", device="cuda", draws=[0])
    record = result["records"][0]
    print(json.dumps(record["timing"]))
    assert record["frozen_comparison"]["predictions_sha256_equal"]
    assert result["accuracy"]["rows"][0]["correct"] == 8887


def _run_cli(args, *, stdout, limit_bytes=None):
    """Run the real ``rev88`` CLI (``python -m bundle.cli``) in a fresh process, optionally under an
    address-space limit (so a command that tries to expand a huge range dies with MemoryError
    instead of filling this machine's memory)."""
    import os
    import resource
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    def limit() -> None:
        if limit_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    env["OPENBLAS_NUM_THREADS"] = "1"
    return subprocess.run([sys.executable, "-m", "bundle.cli", *args], cwd=REPO_ROOT, env=env, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=600, preexec_fn=limit)


def test_a_huge_draw_range_is_refused_from_its_ends_without_expanding_it(tmp_path):
    import subprocess

    out = tmp_path / "run"
    result = _run_cli(["qualify", "--draws", "0-100000000000", "--device", "cpu", "--out", str(out)],
                      stdout=subprocess.PIPE, limit_bytes=1 << 30)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr == "rev88: error: --draws '0-100000000000' selects draws outside 0-10: pick draws 0-10\n"
    assert not out.exists()


def test_a_reversed_draw_range_says_it_is_reversed(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["qualify", "--draws", "10-0", "--device", "cpu", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert result.stderr == "rev88: error: --draws '10-0': draw range 10-0 is reversed: write 0-10\n"
    assert "outside" not in result.stderr and not out.exists()
    with pytest.raises(BundleError, match="draw range 7-3 is reversed: write 3-7"):
        qualify.parse_draws("0,7-3")


def test_qualify_draws_no_progress_bar_into_a_file(tmp_path):
    pytest.importorskip("torch")
    log = tmp_path / "stdout.txt"
    with log.open("w") as stdout:
        result = _run_cli(["qualify", "--device", "cpu", "--draws", "0", "--out", str(tmp_path / "run")],
                          stdout=stdout)
    text = log.read_text()
    assert result.returncode == 0, result.stderr[-2000:] + text
    assert "1 of 11 draws (0)" in text  # the command's own output is there ...
    # ... and no progress bar, not even its last line; the only "━" are the table's own header rules.
    assert "qualify draw" not in text and "1/1" not in text
    assert [line for line in text.splitlines() if "━" in line and set(line) - set("┏┳┓┡╇┩━")] == []
    assert "━" not in result.stderr


class _ThenSleep:
    """Draw 0: the real in-process learner (CPU); any other draw: a native job sleeping 120 s (the
    draw that is still running when the phase is interrupted). Not an InProcessRunner, so jobs > 1."""

    def __init__(self, workdir) -> None:
        from bundle.jobs import SubprocessEngine  # noqa: PLC0415

        self.inner = qualify.InProcessRunner("cpu")
        self.engine, self.workdir = SubprocessEngine(), workdir
        self.finished: list[int] = []
        self.exit_codes: list[int] = []

    def __call__(self, draw_index, inputs):
        from bundle.jobs import JobSpec  # noqa: PLC0415

        if draw_index == 0:
            out = self.inner(draw_index, inputs)
            self.finished.append(draw_index)
            return out
        result = self.engine.run(JobSpec(f"sleep-{draw_index}", ("sleep", "120"), {}, self.workdir))
        self.exit_codes.append(result.exit_code)  # 0 only when the sleep ran to its end
        raise BundleError(f"draw {draw_index}: the sleeping job ended with exit code {result.exit_code}")


def test_interrupt_of_overlapped_draws_stops_their_jobs_and_keeps_the_finished_draw(tmp_path):
    """Ctrl-C while draws run on worker threads: the running draw's job is killed (not waited for),
    the draw that had finished is staged for the resume, nothing else is."""
    from bundle.jobs import _RUNNING

    run_dir, runner_ = tmp_path / "run", _ThenSleep(tmp_path)
    interrupted_when(lambda: runner_.finished and _RUNNING,
                     lambda: qualify.run_qualification(run_dir, draws=[0, 1], runner=runner_, jobs=2), timeout_s=600)
    assert runner_.finished == [0]
    assert not _RUNNING  # the sleeping job was killed and unregistered, not left for its 120 s
    assert len(runner_.exit_codes) == 1 and runner_.exit_codes[0] != 0  # killed: its sleep did not run to the end
    staging = run_dir / ".staging" / "qualify"
    assert (staging / "draw-00.json.gz").is_file() and (staging / "draw-00.predictions.npy").is_file()
    assert not (staging / "draw-01.json.gz").exists() and not (run_dir / "qualify").exists()


class _CudaLabelled(qualify.InProcessRunner):
    """The real runner, its record labelled as the CUDA kernel tool's (a ``fixture.learner`` block naming
    ``kernel_source_sha256``), as a fresh-process fused record is."""

    def __init__(self, device: str, sha: str) -> None:
        super().__init__(device)
        self.sha = sha

    def __call__(self, draw_index, inputs):
        predictions, metadata, extra = super().__call__(draw_index, inputs)
        block = {"name": "rev88-fused", "kernel_tool": "cuda", "kernel_source_sha256": self.sha}
        return predictions, metadata, {**extra, "fixture": {"learner": block}}


def test_a_phase_that_ran_the_cuda_tool_keeps_its_source_in_the_archive(tmp_path):
    """qualify's records name the CUDA tool: the run folder keeps bundle/fused_cuda.cu gzipped, in the manifest;
    records of another source are refused before the phase completes; a rev88 run keeps no source."""
    import gzip
    import hashlib

    from bundle.phases.fixture_runner import CUDA_KERNEL_SOURCE, KERNEL_SOURCE_REL

    source = CUDA_KERNEL_SOURCE.read_bytes()
    run_dir = tmp_path / "run"
    qualify.run_qualification(run_dir, draws=[0], runner=_CudaLabelled("cpu", hashlib.sha256(source).hexdigest()))
    assert gzip.decompress((run_dir / KERNEL_SOURCE_REL).read_bytes()) == source
    assert KERNEL_SOURCE_REL in [f["path"] for f in archive.RunArchive(run_dir).read_manifest()["files"]]
    with pytest.raises(BundleError, match="kernel source"):
        qualify.run_qualification(tmp_path / "other", draws=[0], runner=_CudaLabelled("cpu", "0" * 64))
    assert not (tmp_path / "other" / "qualify").exists() and not (tmp_path / "other" / KERNEL_SOURCE_REL).exists()
    qualify.run_qualification(tmp_path / "plain", draws=[0], device="cpu")
    assert not (tmp_path / "plain" / KERNEL_SOURCE_REL).exists()
