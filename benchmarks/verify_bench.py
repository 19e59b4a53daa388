"""Benchmark: `rev88 verify` of the kept archives, this tree against a baseline commit, and the venv's creation.

Prints, from one run on this machine:

(a) the time to create the virtual environment ``make verify`` needs, timed apart from any
    verification: a fresh ``python -m venv``, pip upgraded (as the Makefile does) and
    ``pip install -e .`` (the base dependencies only, so NVIDIA's ``ncu_report`` is not
    installed). pip's own cache is used as this machine has it. ``--venv DIR`` uses an existing
    environment instead and skips (a);
(b) ``rev88 verify`` of the kept archives (:data:`KEPT`) with this tree's code;
(c) the same with a baseline commit's code (``--baseline``, default :data:`BASELINE`), exported
    with ``git archive`` into a temporary folder and run with the same interpreter and packages,
    on the same archive set, and on every archive under that commit's ``evidence/`` (what its
    ``make verify`` verified), each with its ratio to (b).

Each figure is the median (and min-max) of ``--repeat`` timed runs after one untimed run, the
variants interleaved (b, c, c-all, b, c, …) so that they share the machine's drift; wall time
and the CPU seconds of the process and its workers. The untimed run of (b) and (c) prints
``--json``; their verdicts are compared (timings aside) and the result printed. Load averages
are printed before and after. Nothing is asserted on speed.

Run from anywhere::

    python3 benchmarks/verify_bench.py                  # fresh venv, 5 runs each, baseline 223c55e
    python3 benchmarks/verify_bench.py --venv .venv --repeat 3
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASELINE = "223c55e"
"""The commit before the speed work (its evidence/ holds 16 archives; its ``make verify`` verifies them all)."""
KEPT = ("rev88-original", "h200-20261202", "pinned-cpu-20261201", "h200-fused-cuda-20261205",
        "h200-fused-cuda-20261204e")
"""The archives evidence/INDEX.md keeps (issue 41)."""


class BenchError(Exception):
    """A bad argument or a failed step: printed as one line, exit status 2."""


@dataclass
class Variant:
    """One timed command: label, the tree whose code runs, the arguments after ``rev88 verify``."""

    label: str
    tree: Path
    archives: list[str]
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)

    def row(self) -> dict:
        """Median, min and max of the wall and CPU seconds, and the exit codes seen."""
        return {"label": self.label, "archives": len(self.archives) or "all", "runs": len(self.wall_s),
                "wall_median_s": statistics.median(self.wall_s), "wall_min_s": min(self.wall_s),
                "wall_max_s": max(self.wall_s), "cpu_median_s": statistics.median(self.cpu_s),
                "exit_codes": sorted(set(self.exit_codes))}


def git(*args: str) -> str:
    """Output of ``git -C REPO args`` (stripped).

    Raises:
        BenchError: git is missing or the command fails.
    """
    try:
        res = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False)
    except OSError as exc:
        raise BenchError(f"git cannot be run ({exc}): install git, or pass --no-baseline") from None
    if res.returncode != 0:
        raise BenchError(f"git {' '.join(args)} failed: {res.stderr.strip().splitlines()[-1] if res.stderr else ''}")
    return res.stdout.strip()


def export_tree(ref: str, dest: Path) -> str:
    """Write commit *ref*'s tree into *dest* (``git archive``); returns its short hash.

    Raises:
        BenchError: *ref* is not a commit of this clone (a shallow clone lacks old ones).
    """
    try:
        short = git("rev-parse", "--short", f"{ref}^{{commit}}")
    except BenchError:
        raise BenchError(f"baseline {ref!r} is not a commit of this clone ({REPO}): fetch it (git fetch --unshallow) "
                         "or pass --baseline REF") from None
    blob = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", short], capture_output=True,
                          check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(dest, filter="data")
    return short


def timed(cmd: list[str], *, cwd: Path) -> tuple[float, float, int]:
    """Run *cmd* (output discarded): wall seconds, CPU seconds of it and the children it waited for, exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    code = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_env(),
                          check=False).returncode
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, code


def child_env() -> dict[str, str]:
    """This environment without PYTHONPATH, so each tree's own packages are imported (run with cwd = the tree)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def verify_cmd(python: Path, archives: list[str]) -> list[str]:
    """``rev88 verify`` of *archives* (evidence/<name>; none: every archive) through ``python -m bundle.cli``."""
    return [str(python), "-m", "bundle.cli", "verify", *[f"evidence/{a}" for a in archives]]


def verdicts(python: Path, tree: Path, archives: list[str]) -> list[dict]:
    """``rev88 verify --json`` of *archives* with *tree*'s code, each archive's ``timings_s`` removed.

    Raises:
        BenchError: the command did not print JSON (it failed before verifying).
    """
    res = subprocess.run([*verify_cmd(python, archives), "--json"], cwd=tree, capture_output=True, text=True,
                         env=child_env(), check=False)
    try:
        out = json.loads(res.stdout)
    except json.JSONDecodeError:
        last = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else f"exit {res.returncode}"
        raise BenchError(f"rev88 verify with the code of {tree} printed no JSON: {last}") from None
    for archive in out["archives"]:
        archive.pop("timings_s", None)
    return out["archives"]


def code_root(python: Path, tree: Path) -> Path:
    """The folder ``bundle`` is imported from when *python* runs in *tree* (checks that each tree runs its own code)."""
    res = subprocess.run([str(python), "-c", "import bundle, pathlib; print(pathlib.Path(bundle.__file__).parent)"],
                         cwd=tree, capture_output=True, text=True, env=child_env(), check=False)
    if res.returncode != 0:
        raise BenchError(f"{python} cannot import bundle in {tree}: {res.stderr.strip().splitlines()[-1:]}")
    return Path(res.stdout.strip()).parent


def make_venv(base: Path) -> tuple[Path, dict[str, float]]:
    """(a): a fresh venv under *base* with this tree installed editable (base dependencies); seconds per step.

    Raises:
        BenchError: a step failed (no network or package index, no venv module).
    """
    venv, steps = base / "venv", {}
    for name, cmd in (("venv", [sys.executable, "-m", "venv", str(venv)]),
                      ("pip upgrade", [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--upgrade", "pip"]),
                      ("pip install -e .", [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-e",
                                            str(REPO)])):
        t0 = time.perf_counter()
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        steps[name] = time.perf_counter() - t0
        if res.returncode != 0:
            tail = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
            raise BenchError(f"creating the venv failed at {name}: {tail}")
    return venv, steps


def load() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each command (default 5)")
    parser.add_argument("--venv", type=Path, help="use this virtual environment instead of creating one (skips (a))")
    parser.add_argument("--baseline", default=BASELINE, help=f"baseline commit (default {BASELINE})")
    parser.add_argument("--no-baseline", action="store_true", help="time this tree only (no (c))")
    parser.add_argument("--no-all", action="store_true", help="skip the baseline's run over all of its archives")
    parser.add_argument("--archives", default=",".join(KEPT), help="comma-separated archive names under evidence/ "
                        "(default: the kept five)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat {args.repeat}: give at least 1 timed run")
    args.archive_list = [a for a in args.archives.split(",") if a]
    missing = [a for a in args.archive_list if not (REPO / "evidence" / a).is_dir()]
    if not args.archive_list or missing:
        parser.error(f"--archives: {', '.join(missing) or 'none given'} not under {REPO / 'evidence'}")
    if args.venv is not None and not (args.venv / "bin" / "python").exists():
        parser.error(f"--venv {args.venv}: no bin/python there; pass a virtual environment (e.g. .venv after "
                     "`make .venv/.base`)")
    return args


def run(args: argparse.Namespace, tmp: Path) -> dict:
    """Measure and print; returns the figures (for ``--json``)."""
    figures: dict = {"cores": os.cpu_count(), "load_before": load()}
    print(f"verify_bench: {os.cpu_count()} cores, load average {figures['load_before']} (before)")
    if args.venv is None:
        venv, steps = make_venv(tmp)
        figures["venv_s"] = steps
        print(f"(a) venv creation, timed apart: {sum(steps.values()):.1f} s "
              f"({', '.join(f'{k} {v:.1f} s' for k, v in steps.items())}; pip's cache as this machine has it)")
    else:
        venv = args.venv.resolve()
        print(f"(a) venv creation: not measured (--venv {args.venv})")
    python = venv / "bin" / "python"
    reader = subprocess.run([str(python), "-c", "import ncu_report"], capture_output=True, check=False).returncode == 0
    figures["ncu_report_importable"] = reader
    print(f"    ncu_report importable in {venv}: {'yes' if reader else 'no'}")
    dirty = " + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else ""
    current = Variant(f"current {git('rev-parse', '--short', 'HEAD')}{dirty}", REPO, args.archive_list)
    variants = [current]
    if code_root(python, REPO).resolve() != REPO:
        raise BenchError(f"{python} imports bundle from {code_root(python, REPO)}, not from {REPO}")
    if not args.no_baseline:
        base_tree = tmp / "baseline"
        short = export_tree(args.baseline, base_tree)
        if code_root(python, base_tree) != base_tree.resolve():
            raise BenchError(f"{python} does not import the baseline's own code in {base_tree}")
        variants.append(Variant(f"baseline {short}", base_tree, args.archive_list))
        if not args.no_all:
            every = sorted(p.name for p in (base_tree / "evidence").iterdir() if p.is_dir())
            variants.append(Variant(f"baseline {short}, all {len(every)} (its make verify)", base_tree, []))
        same = verdicts(python, REPO, args.archive_list) == verdicts(python, base_tree, args.archive_list)
        figures["verdicts_identical"] = same
    for variant in variants:  # one untimed run each (files into the page cache, imports compiled)
        timed(verify_cmd(python, variant.archives), cwd=variant.tree)
    for _ in range(args.repeat):
        for variant in variants:
            wall, cpu, code = timed(verify_cmd(python, variant.archives), cwd=variant.tree)
            variant.wall_s.append(wall)
            variant.cpu_s.append(cpu)
            variant.exit_codes.append(code)
    print(f"(b)/(c) rev88 verify, {len(args.archive_list)} archives ({', '.join(args.archive_list)}) unless 'all'; "
          f"median of {args.repeat} timed runs after 1 untimed, interleaved:")
    ours = statistics.median(current.wall_s)
    figures["rows"] = []
    for variant in variants:
        row = variant.row()
        ratio = "" if variant is current else f"  current/this {ours / row['wall_median_s']:.2f}"
        row["current_over_this"] = None if variant is current else ours / row["wall_median_s"]
        figures["rows"].append(row)
        print(f"    {variant.label:<44} wall {row['wall_median_s']:6.2f} s ({row['wall_min_s']:.2f}-"
              f"{row['wall_max_s']:.2f})  cpu {row['cpu_median_s']:6.2f} s  exit {row['exit_codes']}{ratio}")
    if "verdicts_identical" in figures:
        print(f"    verdicts of the {len(args.archive_list)} archives, current vs baseline (timings aside): "
              f"{'identical' if figures['verdicts_identical'] else 'DIFFERENT'}")
    figures["load_after"] = load()
    print(f"load average {figures['load_after']} (after)")
    return figures


def main(argv: list[str] | None = None) -> int:
    """Entry point: prints the figures; exit 2 with one line on a bad argument or a failed step."""
    args = parse_args(argv)
    try:
        with tempfile.TemporaryDirectory(prefix="verify-bench-") as tmp:
            figures = run(args, Path(tmp))
    except BenchError as exc:
        print(f"verify_bench: error: {exc}", file=sys.stderr)
        return 2
    if args.json is not None:
        part = args.json.with_name(args.json.name + ".part")
        part.write_text(json.dumps(figures, indent=2) + "\n")
        part.replace(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
