"""The compose ``gpu`` service's own path, inside the built GPU image, on the CPU (marked ``docker``).

``docker compose -f compose.yaml -f compose.cpu.yaml run --rm gpu`` starts the service without its
GPU reservation and runs ``rev88 reproduce --engine native --device cpu --phases
validate,compare,qualify`` in ONE container of the image (the whole orchestration inside it, as on a
GPU host), into a run folder on this host. The records must hold the comparisons with the frozen
reference that the image carries (``REV88_ORIGINAL_DIR=/opt/rev88/evidence/rev88-original``), and
this host's verifier must FAIL the folder on exactly the checks a CPU diagnostic fails.

.ci/run builds the image and sets REV88_GPU_IMAGE; with REV88_REQUIRE_DOCKER=1 a missing image or
Compose v2 fails instead of skipping. REV88_COMPOSE_CPU_RUN names the run folder (CI: the same one
for its own step and for ``make test``, so the second run finds every phase complete
and writes nothing: one line, exit 0); unset, a temporary folder.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
IMAGE = os.environ.get("REV88_GPU_IMAGE", "rev88/gpu:local")
ORIGINAL = REPO / "evidence" / "rev88-original"
COMPOSE = ["docker", "compose", "-f", str(REPO / "compose.yaml"), "-f", str(REPO / "compose.cpu.yaml")]

CPU_DIAGNOSTIC_FAILS = {
    # each compare configuration was run with --device cpu: no CUDA memory figures to compare
    "compare.config.device",
    # the execution names no CUDA device (CPU only): the protocol's phases must run on one
    "consistency.environment.cuda_device",
}
"""The checks a CPU diagnostic run of validate, compare and qualify must FAIL, and no other."""

pytestmark = pytest.mark.docker


def _missing(message: str) -> None:
    if os.environ.get("REV88_REQUIRE_DOCKER") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def compose() -> list[str]:
    """The compose command with both files, once Compose v2 answers (``docker compose version``)."""
    try:
        version = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        _missing(f"docker CLI not usable ({exc})")
    if version.returncode != 0:
        _missing(f"Compose v2 is not installed as a docker CLI plugin ({version.stderr.strip()[:200]})")
    return COMPOSE


def _config(command: list[str], env: dict[str, str]) -> dict:
    res = subprocess.run([*command, "config", "--format", "json"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, **env}, cwd=REPO)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_the_override_drops_only_the_gpu_reservation(compose, tmp_path):
    env = {"REV88_GPU_IMAGE": IMAGE, "REV88_EVIDENCE_DIR": str(tmp_path), "RUN_ID": "cpu", "REV88_IMAGE_ID": ""}
    base = _config(COMPOSE[:4], env)["services"]["gpu"]
    cpu = _config(compose, env)["services"]["gpu"]
    assert base["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    assert "deploy" not in cpu and "cap_add" not in cpu
    assert (cpu["image"], cpu["environment"]) == (base["image"], base["environment"])
    assert cpu["command"] == ["rev88", "reproduce", "--engine", "native", "--device", "cpu",
                              "--phases", "validate,compare,qualify", "--out", "/evidence/cpu"]
    assert [(v["source"], v["target"]) for v in cpu["volumes"]] == [(str(tmp_path), "/evidence")]


@pytest.fixture(scope="module")
def image_id() -> str:
    """The ID (``sha256:…``) of the image under test."""
    inspect = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", IMAGE], capture_output=True,
                             text=True, timeout=60)
    if inspect.returncode != 0:
        _missing(f"image {IMAGE} is missing: build it with `make image` (or set REV88_GPU_IMAGE)")
    return inspect.stdout.strip()


@pytest.fixture(scope="module")
def cpu_run(compose, image_id, tmp_path_factory) -> tuple[Path, str]:
    """Run the service once, passing the image ID as compose.yaml documents: ``(run folder, its output)``."""
    named = os.environ.get("REV88_COMPOSE_CPU_RUN")
    run_dir = Path(named).resolve() if named else tmp_path_factory.mktemp("compose") / "cpu-run"
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "REV88_GPU_IMAGE": IMAGE, "REV88_IMAGE_ID": image_id,
           "REV88_EVIDENCE_DIR": str(run_dir.parent), "RUN_ID": run_dir.name}
    complete = all((run_dir / phase).is_dir() for phase in ("validate", "compare", "qualify"))
    res = subprocess.run([*compose, "run", "--rm", "--user", f"{os.getuid()}:{os.getgid()}", "gpu"],
                         capture_output=True, text=True, timeout=1500, env=env, cwd=REPO)
    output = res.stdout + res.stderr
    assert "Traceback" not in output, output[-4000:]
    if complete:  # a folder an earlier run completed (CI's step before `make test`): nothing runs, nothing is written
        assert res.returncode == 0 and "nothing to do" in output, output[-4000:]
        return run_dir, output
    # reproduce ends with the verifier inside the container: FAILED (exit 1) is a CPU diagnostic's verdict
    assert res.returncode == 1, output[-4000:]
    assert f"{run_dir.name} (run): FAILED" in output, output[-4000:]
    return run_dir, output


def _record(run_dir: Path, rel: str) -> dict:
    with gzip.open(run_dir / rel, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def test_compare_compared_draw_0_with_the_frozen_reference(cpu_run):
    run_dir, _ = cpu_run
    comparison = _record(run_dir, "compare/comparison.json.gz")
    frozen = json.loads((ORIGINAL / "results" / "draw-00.json").read_text())["metadata"]
    assert comparison["draw_index"] == 0
    block = comparison["frozen_reference"]
    assert block["path"] == "evidence/rev88-original/results/draw-00.json"
    assert block["predictions_sha256"] == frozen["predictions_sha256"]
    assert block["predictions_match"] == {":4096:8": True, ":16:8": True, ":0:0": True}
    assert comparison["predictions_bit_equal_to_frozen_reference"] is True


def test_validate_compared_with_the_original_validation(cpu_run):
    run_dir, _ = cpu_run
    validation = _record(run_dir, "validate/validation.json.gz")
    original = json.loads((ORIGINAL / "cache-audit" / "cuda-validation.json").read_text())
    oc = validation["original_comparison"]
    assert validation["device"] == "cpu"
    assert oc["path"] == "evidence/rev88-original/cache-audit/cuda-validation.json"
    assert oc["original_check_count"] == original["numerical_validation"]["checks"] == oc["check_count"]
    # platform-independent: the inputs, orders, initial weights and the smoke's predictions
    assert {k: oc["equal"][k] for k in ("input_hashes", "epoch_permutation_sha256", "initial_parameter_sha256",
                                         "predictions_sha256")} == dict.fromkeys(
        ("input_hashes", "epoch_permutation_sha256", "initial_parameter_sha256", "predictions_sha256"), True)


def test_qualify_and_the_execution_record_the_image(cpu_run, image_id):
    run_dir, _ = cpu_run
    accuracy = _record(run_dir, "qualify/accuracy.json.gz")
    assert accuracy["frozen_comparison"]["correct_equal"] is True
    for i in range(11):
        assert _record(run_dir, f"qualify/draw-{i:02d}.json.gz")["frozen_comparison"]["predictions_sha256_equal"]
    executions = _record(run_dir, "environment.json.gz")["executions"]
    assert {(e["engine"], e["image_reference"], e["image_id"], e["pinned_image"]) for e in executions} == {
        ("docker", IMAGE, image_id, True)}


def test_the_host_verifier_fails_only_what_a_cpu_diagnostic_must_fail(cpu_run):
    run_dir, _ = cpu_run
    res = subprocess.run([sys.executable, "-m", "bundle.cli", "verify", "--json", str(run_dir)],
                         capture_output=True, text=True, timeout=600, cwd=REPO)
    assert res.returncode == 1, res.stderr
    results = json.loads(res.stdout)["archives"][0]["results"]
    failed = {r["check_id"] for r in results if r["status"] == "FAIL"}
    assert failed == CPU_DIAGNOSTIC_FAILS, sorted(failed)
    assert _frozen_verdicts(results) == {  # recomputed from the frozen reference on the CPU too
        "compare.frozen_reference.present": "PASS", "compare.frozen_reference": "PASS",
        "compare.predictions_bit_equal_to_frozen_reference": "PASS",
        "validate.original_comparison.present": "PASS", "validate.original_comparison": "PASS"}


def _frozen_verdicts(results: list[dict]) -> dict[str, str]:
    return {r["check_id"]: r["status"] for r in results if r["check_id"].startswith(
        ("compare.frozen_reference", "compare.predictions_bit_equal_to_frozen", "validate.original_comparison"))}


@pytest.mark.parametrize(("rel", "key", "value", "fails"), [
    ("compare/comparison.json.gz", "predictions_bit_equal_to_frozen_reference", False,
     "compare.predictions_bit_equal_to_frozen_reference"),
    ("compare/comparison.json.gz", "frozen_reference", None, "compare.frozen_reference.present"),
    ("validate/validation.json.gz", "original_comparison", None, "validate.original_comparison.present"),
])
def test_a_forged_frozen_comparison_of_the_cpu_run_fails(cpu_run, tmp_path, rel, key, value, fails):
    from tests.conftest import forge_record, linked_copy  # noqa: PLC0415
    from verify.registry import verify_archive  # noqa: PLC0415

    run_dir, _ = cpu_run
    copy = linked_copy(run_dir, tmp_path)
    forge_record(copy, rel, lambda record: record.update({key: value}))
    failed = {r.check_id for r in verify_archive(copy).failures()}
    assert failed == CPU_DIAGNOSTIC_FAILS | {fails}, sorted(failed)
