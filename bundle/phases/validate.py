"""Runtime validation (spec 7.5): numerical replay checks, API vs CLI, and the entry's refusals.

The phase writes synthetic inputs (PCG64(9140914): 19 train, 7 query; config epochs 2,
batch 8) into ``validate/smoke/`` and runs, each in a fresh process through the engine with
``CUBLAS_WORKSPACE_CONFIG=:16:8`` in the child only (1, 3 and 4 at the same time, then 2 alone):

1. the worker (``python -m bundle.phases.validate --worker``): the learner's
   ``validate_cuda_replay`` (depth 1 and 2; atol 2e-5, rtol 3e-3), the CPU reconstruction
   self-test, and the API smoke (one prepared task run twice: byte-equal hashes);
2. the fixture CLI on the same npz, whose outputs must equal the API's;
3. the fixture on an npz that adds ``test_labels``: must fail with "exactly the three";
4. a process that initialises CUDA before importing ``bundle.fixture``: must fail with
   "before CUDA initialization".

It writes ``validate/validation.json.gz`` (keys in docs/evidence-format.md).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from bundle import archive
from bundle.archive import RunArchive
from bundle.jobs import Engine, JobSpec
from bundle.phases.fixture_runner import (
    PREFERRED_WORKSPACE,
    engine_env,
    fixture_job,
    load_predictions,
    npz_bytes,
    run_fixture_job,
    run_overlapped,
    write_fixture_inputs,
)
from bundle.preflight import frozen_members, require_frozen_reference
from protocol import hostrefs
from protocol.errors import BundleError
from protocol.fixture_inputs import SMOKE_QUERY, SMOKE_SEED, SMOKE_TRAIN, smoke_inputs  # noqa: F401

PHASE = "validate"
SMOKE_CONFIG = {"alpha": 0.5, "batch_size": 8, "momentum": 0.9, "weight_decay": 0.0, "seed": 11, "depth": 2,
                "epochs": 2, "learning_rate": 0.1}
COMPARED_HASHES = ("final_parameter_sha256", "final_velocity_sha256", "state_vector_sha256",
                   "predictions_sha256", "scores_sha256")
# Simulated on CPU builds (no CUDA to initialise); real on the device.
LATE_INIT_CODE = {
    "cuda": "import torch; torch.cuda.init(); import bundle.fixture",
    "cpu": "import torch; torch.cuda.is_initialized = lambda: True; import bundle.fixture",
}


def _hashes_equal(a: Mapping[str, Any], b: Mapping[str, Any], key: str) -> bool:
    return a.get(key) is not None and a.get(key) == b.get(key)


def _expect_refusal(engine: Engine, spec: JobSpec, needle: str, on_line: Callable[[str], None] | None,
                    path: Path) -> dict[str, Any]:
    """Run a job that must refuse; *on_line* gets one line for an expected refusal (the line naming
    *needle*, not the job's whole output: a self-test's traceback is no error of this run), or every
    output line when the job did not refuse as expected."""
    result = engine.run(spec)
    record = {"job": spec.name, "exit_code": result.exit_code, "expected_message": needle,
              "message_found": needle in result.stderr,
              "rejected": result.exit_code != 0 and needle in result.stderr,
              "stderr_tail": result.stderr[-2000:]}
    if on_line is not None:
        if record["rejected"]:
            said = next((line.strip() for line in result.stderr.splitlines() if needle in line), needle)
            said = re.sub(r"^[\w.]*(Error|Exception): ", "", said)  # the message, not the exception's class
            on_line(f"{spec.name}: refused as expected (exit {result.exit_code}): {said}")
        else:
            for line in (result.stdout + result.stderr).splitlines():
                on_line(line)
            on_line(f"{spec.name}: NOT refused as expected (exit {result.exit_code}; wanted {needle!r})")
    archive.write_json_gz(path, record)
    return record


def run_validate(run_dir: Path, *, engine: Engine, force: bool = False, device: str = "cuda",
                 on_line: Callable[[str], None] | None = None,
                 on_job: Callable[[str], None] | None = None, concurrent: bool = True) -> dict[str, Any]:
    """Run the runtime validation into ``run_dir/validate/`` and return ``validation.json.gz``'s record.

    Args:
        run_dir: the run archive folder.
        engine: runs each job in a fresh process.
        force: replace an already completed ``validate`` phase.
        device: ``cuda`` (protocol) or ``cpu`` (diagnostic: the replay check runs eagerly; late
            CUDA initialisation is simulated).
        on_line: receives every output line of the jobs that must succeed, and one line for each
            expected refusal (all its lines when it did not refuse as expected).
        on_job: called with each job name before it starts.
        concurrent: run jobs 1, 3 and 4 (which record no timing or memory figure) at the same
            time, then job 2 alone; ``False``: all four one after another (before 2026-12-01).

    Raises:
        BundleError: the frozen reference's validation record is not on this host (checked before
            anything is written), or a job that must succeed failed (finished jobs are kept for resume).
    """
    original_dir = require_frozen_reference(frozen_members([PHASE]))
    run = RunArchive(run_dir)
    with run.phase(PHASE, force=force) as stage:
        smoke = stage.path.resolve() / "smoke"
        inputs = smoke_inputs()
        npz, cfg = write_fixture_inputs(smoke, inputs, SMOKE_CONFIG)
        bad = archive.atomic_write_bytes(smoke / "with-test-labels.npz", npz_bytes(
            {**inputs, "test_labels": np.zeros(SMOKE_QUERY, dtype=np.int64)}))
        env = {"CUBLAS_WORKSPACE_CONFIG": PREFERRED_WORKSPACE, **engine_env(engine)}

        def announce(name: str) -> None:
            if on_job is not None:
                on_job(name)

        worker_out = smoke / "worker.json.gz"

        def worker_job() -> None:
            if stage.has("smoke/worker.json.gz"):
                return
            announce("validate/worker")
            spec = JobSpec("validate/worker", ("{python}", "-m", "bundle.phases.validate", "--worker", "--input",
                                               str(npz), "--config", str(cfg), "--output", str(worker_out),
                                               "--device", device), env, smoke, gpu=device == "cuda")
            result = engine.run(spec, on_line=on_line)
            if not result.ok or not worker_out.is_file():
                raise BundleError(f"validation worker failed (exit {result.exit_code}): {result.last_error_line()}")

        refusals: dict[str, dict[str, Any]] = {}

        def refusal_job(key: str, rel: str, spec: JobSpec, needle: str) -> None:
            if stage.has(rel):
                refusals[key] = archive.read_json_gz(stage / rel)
            else:
                announce(spec.name)
                refusals[key] = _expect_refusal(engine, spec, needle, on_line, stage / rel)

        # The worker and the two refusals measure nothing and run at the same time; the CLI job
        # (a fixture record with memory and timing figures) runs after them, alone.
        jobs = [worker_job] + [lambda args=args: refusal_job(*args) for args in (
            ("query_label_archive", "smoke/refusal-test-labels.json.gz",
             fixture_job("validate/refuse-test-labels", engine=engine, npz=bad, config=cfg,
                         output=smoke / "refused.json.gz", workspace=PREFERRED_WORKSPACE, device=device),
             "exactly the three"),
            ("late_cuda_initialization", "smoke/refusal-late-cuda.json.gz",
             JobSpec("validate/refuse-late-cuda", ("{python}", "-c", LATE_INIT_CODE[device]), env, smoke,
                     gpu=device == "cuda"),
             "before CUDA initialization"),
        )]
        run_overlapped(jobs, len(jobs) if concurrent else 1)
        worker = archive.read_json_gz(worker_out)
        cli_out = smoke / "cli.json.gz"
        if stage.has("smoke/cli.json.gz"):
            cli = archive.read_json_gz(cli_out)
        else:
            announce("validate/cli")
            cli = run_fixture_job(engine, fixture_job("validate/cli", engine=engine, npz=npz, config=cfg,
                                                      output=cli_out, workspace=PREFERRED_WORKSPACE,
                                                      device=device), cli_out, on_line)
        cli_predictions = load_predictions(cli_out, cli)
        record = build_record(worker, cli, cli_predictions, refusals, device,
                              archive.file_sha256(cli_out), original_dir)
        archive.write_json_gz(stage / "validation.json.gz", record)
    run.record_execution(PHASE, worker["execution"])
    return record


def build_record(worker: Mapping[str, Any], cli: Mapping[str, Any], cli_predictions: np.ndarray,
                 refusals: Mapping[str, Mapping[str, Any]], device: str, cli_record_sha256: str,
                 original_dir: Path | None = None) -> dict[str, Any]:
    """Assemble ``validation.json.gz`` from the worker record, the CLI record and the refusal jobs.

    *original_dir*: the frozen reference folder for ``original_comparison`` (default: the search
    order of ``protocol.hostrefs.FROZEN_REFERENCE``; a missing one raises ``BundleError``).
    """
    api = worker["api"]
    api_meta, cli_meta = api["metadata"], cli["metadata"]
    smoke = {
        "train_examples": SMOKE_TRAIN,
        "query_examples": SMOKE_QUERY,
        "batch_sizes": [8, 8, 3],
        "predictions_equal": api["predictions"] == cli_predictions.tolist()
        and _hashes_equal(api_meta, cli_meta, "predictions_sha256"),
        "final_parameters_equal": _hashes_equal(api_meta, cli_meta, "final_parameter_sha256"),
        "final_velocity_equal": _hashes_equal(api_meta, cli_meta, "final_velocity_sha256"),
        "state_vector_equal": _hashes_equal(api_meta, cli_meta, "state_vector_sha256"),
        "scores_equal": _hashes_equal(api_meta, cli_meta, "scores_sha256"),
        "repeated_api_replay_byte_equal": api["repeated_api_replay_byte_equal"],
        "query_label_archive_rejected": refusals["query_label_archive"]["rejected"],
        "late_cuda_initialization_rejected": refusals["late_cuda_initialization"]["rejected"],
        "refusals": dict(refusals),
        "cli_record_sha256": cli_record_sha256,
        "config": SMOKE_CONFIG,
        "metadata": api_meta,
    }
    smoke = {"passed": all(v for k, v in smoke.items() if isinstance(v, bool)), **smoke}
    numerical = worker["numerical_validation"]
    selftest = worker["cpu_reconstruction_selftest"]
    selftest_passed = all(case.get("passed") for case in selftest)
    numerical_passed = bool(numerical and numerical.get("passed"))
    return {
        "passed": bool(smoke["passed"] and selftest_passed and numerical_passed),
        "finished_at_utc": archive.utc_now(),
        "device": device,
        "gpu": worker["hardware"].get("name"),
        "torch_version": worker["software"].get("torch"),
        "workspace": worker["workspace"],
        "numerical_validation": numerical,
        "cpu_reconstruction_selftest": {"passed": selftest_passed, "cases": selftest},
        "api_cli_smoke": smoke,
        "original_comparison": original_comparison(api_meta, numerical, original_dir),
        "source_sha256": worker["source_sha256"],
        "runner_sha256": archive.file_sha256(Path(__file__)),
        "hardware": worker["hardware"],
        "software": worker["software"],
        "execution": worker["execution"],
    }


def original_comparison(api_meta: Mapping[str, Any], numerical: Mapping[str, Any] | None,
                        original_dir: Path | None = None) -> dict[str, Any]:
    """Which API-smoke hashes equal the original's ``cuda-validation.json`` (informational: the
    inputs, orders and initial weights are platform-independent; trained state may not be).

    Args:
        api_meta: the worker's API-smoke metadata.
        numerical: the worker's numerical validation (``checks`` is compared), or ``None``.
        original_dir: the frozen reference folder (default: ``protocol.hostrefs.FROZEN_REFERENCE``'s
            search order).

    Returns:
        ``path``, ``equal`` (per hash key), ``original_check_count``, ``check_count``,
        ``original_maximum_abs_error``.

    Raises:
        BundleError: no place holds the original's validation record (never ``null`` instead).
    """
    import json  # noqa: PLC0415

    if original_dir is None:
        original_dir = require_frozen_reference([hostrefs.FROZEN_VALIDATION])
    original = json.loads((Path(original_dir) / hostrefs.FROZEN_VALIDATION).read_text())
    meta = original["api_cli_smoke"]["metadata"]
    keys = ("input_hashes", "epoch_permutation_sha256", "initial_parameter_sha256", *COMPARED_HASHES)
    return {
        "path": f"{hostrefs.FROZEN_REFERENCE.repo_path}/{hostrefs.FROZEN_VALIDATION}",
        "equal": {key: meta.get(key) == api_meta.get(key) for key in keys},
        "original_check_count": original["numerical_validation"]["checks"],
        "check_count": None if numerical is None else numerical.get("checks"),
        "original_maximum_abs_error": original["numerical_validation"]["maximum_abs_error"],
    }


def worker_main(input_path: Path, config_path: Path, output: Path, device: str, *,
                captured: Any | None = None) -> None:
    """The GPU worker: replay validation, CPU self-test, API smoke; writes *output*.

    *captured* (a :class:`bundle.fixture.WarningCapture` around this call) puts the warnings
    torch gave into the record's ``warnings`` list instead of the console.

    Raises:
        BundleError: the workspace setting is missing/late, or the inputs are invalid.
    """
    from bundle import fixture  # noqa: PLC0415  (refuses if CUDA is already initialised)

    workspace = fixture.require_workspace_config()
    inputs = fixture.load_inputs(input_path)
    config = fixture.load_config(config_path)
    import torch  # noqa: PLC0415

    from bundle import hostinfo, learner  # noqa: PLC0415

    if device == "cuda":
        torch.cuda.init()
    fixture.check_workspace_unchanged(workspace)
    numerical = learner.validate_cuda_replay(device=device)
    selftest = learner.cpu_reconstruction_selftest()
    fixture.check_workspace_unchanged(workspace)
    task = learner.prepare_task(inputs["train_images"], inputs["train_labels"], inputs["test_images"], config,
                                device=device)
    task.run()
    first_predictions, first_meta = task.outputs()
    task.run()
    second_predictions, second_meta = task.outputs()
    repeat_equal = bool(np.array_equal(first_predictions, second_predictions)) and all(
        first_meta[key] == second_meta[key] for key in COMPARED_HASHES)
    hardware = hostinfo.hardware_record(torch.cuda.current_device() if device == "cuda" else 0)
    software = hostinfo.software_record()
    engine, image = fixture.execution_engine()
    archive.write_json_gz(output, {
        "workspace": workspace,
        "numerical_validation": numerical,
        "cpu_reconstruction_selftest": selftest,
        "api": {"predictions": first_predictions.tolist(), "metadata": first_meta,
                "second_run_hashes": {key: second_meta[key] for key in COMPARED_HASHES},
                "repeated_api_replay_byte_equal": repeat_equal},
        "source_sha256": fixture.source_sha256(),
        "hardware": hardware,
        "software": software,
        "execution": hostinfo.execution_record(engine, image, hardware, software),
        "warnings": captured.summary() if captured is not None else [],
    })


def main(argv: list[str] | None = None) -> int:
    """``python -m bundle.phases.validate --worker ...`` (started by :func:`run_validate`)."""
    parser = argparse.ArgumentParser(prog="python -m bundle.phases.validate")
    parser.add_argument("--worker", action="store_true", required=True)
    parser.add_argument("--input", required=True, type=Path)
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--output", required=True, type=Path)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = parser.parse_args(argv)
    try:
        from bundle.fixture import WarningCapture  # noqa: PLC0415  (refuses if CUDA is already initialised)

        with WarningCapture() as captured:
            worker_main(args.input, args.config, args.output, args.device, captured=captured)
    except BundleError as exc:
        print(f"rev88 validate worker: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
