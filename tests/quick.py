"""The quick subset (``make test-quick``, marker ``quick``): a few minutes on a 2-core machine, and every
module of ``bundle/``, ``verify/`` and ``protocol/`` imported by at least one of its tests.

:data:`QUICK` names the tests (node-id prefixes: a module, a test, or a test with its parameters);
``tests/conftest.py`` marks them ``quick``. ``make test-quick`` collects only their files
(``python -m tests.quick`` prints them) and selects ``-m quick``; such a session ends by checking
:func:`missing_modules` over the modules its processes imported (pytest-xdist workers report theirs:
at the import of a quick test file or while its quick tests ran) and fails naming any module of
``bundle/``, ``verify/`` or ``protocol/`` that none imported. The quick tests use only the kept archives of
``evidence/`` and ``data/mnist``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bundle", "verify", "protocol")
"""The packages whose every module the subset must import."""

QUICK = (
    # the command line, its refusals and its one-line errors (imports every command module)
    "tests/bundle/test_cli_usage.py",
    "tests/bundle/test_entry.py",
    "tests/test_quick_subset.py",
    "tests/bundle/test_preflight.py::test_no_cuda_is_one_line_and_writes_nothing",
    "tests/bundle/test_preflight.py::test_gpu_only_phases_on_the_cpu_are_refused_before_anything",
    "tests/bundle/test_preflight.py::test_a_bad_raw_dir_leaves_no_staging_folder",
    "tests/bundle/test_preflight.py::test_a_wrong_phase_is_named_with_the_valid_ones",
    "tests/bundle/test_preflight.py::test_needs_follow_the_phases_and_the_device",
    "tests/bundle/test_preflight.py::test_probe_job_reports_what_the_jobs_will_see",
    # the writer's parts on the CPU
    "tests/bundle/test_archive.py",
    "tests/bundle/test_boards.py::test_select",
    "tests/bundle/test_boards.py::test_gpu_lock_serialises_processes",
    "tests/bundle/test_boards.py::test_range_lock_refusals",
    "tests/bundle/test_boards.py::test_first_failure_stops_the_rest",
    "tests/bundle/test_console.py",
    "tests/bundle/test_data.py",
    "tests/bundle/test_docker_engine.py",
    "tests/bundle/test_energy.py",
    "tests/bundle/test_energy_recorded.py",
    "tests/bundle/test_hostinfo.py",
    "tests/bundle/test_jobs.py",
    "tests/bundle/test_learner.py::test_config_orders_and_checks",
    "tests/bundle/test_learner.py::test_validate_replay_eager_part_on_cpu",
    "tests/bundle/test_nvml.py",
    "tests/bundle/test_phase_energy.py",
    "tests/bundle/test_phase_profile.py",
    "tests/bundle/test_compare.py",
    "tests/bundle/test_validate.py",
    "tests/bundle/test_qualify.py",
    "tests/bundle/test_profile.py",
    "tests/bundle/test_slurm_engine.py",
    "tests/test_fused_cuda_host.py",
    "tests/test_fused_learner.py::test_bad_inputs_are_one_line_bundle_errors",
    "tests/test_fused_learner.py::test_grid_state_map_is_the_tile_layout",
    "tests/test_fused_learner.py::test_more_ctas_than_sms_is_a_bundle_error",
    "tests/test_fused_learner.py::test_device_needs_the_matching_interpreter_mode",
    # the verifier on the kept archives
    "tests/verify/test_original.py",
    "tests/verify/test_verify_totals.py",
    "tests/verify/test_differential.py",
    "tests/verify/test_arith.py",
    "tests/test_import_layers.py",
    "tests/verify/test_interrupt.py",
    "tests/verify/test_regressions.py::test_verify_in_a_pipe_is_compact_and_json_unchanged",
    "tests/verify/test_regressions.py::test_report_refusal_writes_nothing",
    "tests/verify/test_regressions.py::test_report_png_is_written_atomically",
    "tests/verify/test_timing_placement.py::test_shipped_single_board_archive_passes_every_timing_and_placement_check",
    "tests/verify/test_leaf_coverage.py::test_verify_explain_prints_every_attestation",
    "tests/verify/test_leaf_coverage.py::test_field_globs",
    # the shared definitions: host references and their refusals, the layering, the README's figures
    "tests/bundle/test_hostrefs.py",
    "tests/test_readme_figures.py",
    # the check catalog (verify.catalog is imported only by --list-checks / --check)
    "tests/verify/test_catalog.py::test_verify_lists_the_catalog_and_prints_one_entry",
)
"""Node-id prefixes of the quick tests (``make test-quick``); a test marked ``slow`` in them is left out."""


def is_quick(nodeid: str) -> bool:
    """Whether the test *nodeid* belongs to :data:`QUICK`: it lies in a listed module, or its id starts
    with a listed test's (``...::test_select`` takes ``test_select_all...`` and every parameter set)."""
    return any(nodeid.startswith(f"{q}::" if q.endswith(".py") else q) for q in QUICK)


def quick_files() -> list[str]:
    """The test files of :data:`QUICK`, in order, each once (paths relative to the repository)."""
    return list(dict.fromkeys(q.split("::")[0] for q in QUICK))


def collects_only_quick_files(args: Iterable[str], invocation_dir: Path) -> bool:
    """Whether a pytest run's file arguments are exactly :func:`quick_files` (so that no other test
    file's imports count for the module check)."""
    given = {(invocation_dir / a).resolve() for a in args}
    return given == {(REPO_ROOT / f).resolve() for f in quick_files()}


def project_modules(root: Path = REPO_ROOT) -> list[str]:
    """Every module of :data:`PACKAGES` (``bundle``, ``bundle.cli``, ``verify.checks.run``, ...), from the files."""
    out = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def imported_project_modules() -> list[str]:
    """The modules of :data:`PACKAGES` this process has imported."""
    return sorted(name for name in sys.modules if name.split(".")[0] in PACKAGES)


def missing_modules(imported: Iterable[str], root: Path = REPO_ROOT) -> list[str]:
    """The modules of :func:`project_modules` not in *imported*."""
    seen = set(imported)
    return [name for name in project_modules(root) if name not in seen]


if __name__ == "__main__":  # `python -m tests.quick`: the files for `make test-quick`
    print(" ".join(quick_files()))
