"""Per-phase wall time of a reproduce, the old way against the new way, on one GPU in one run.

Old and new differ only where a phase's old way still exists (see docs/protocol.md, "Where the
time goes"):

* qualify: the 11 fresh draw processes one after another (``jobs=1``) against all at once;
* energy: each interleaved trial's process started after the previous one exited, against the
  next one pre-started behind the board's GPU lock (``prestart_next``);
* profile: one ncu run at a time (``overlap=1``) against the phase's default (four at once,
  preparing together under the shared GPU lock, each range alone);
* validate, compare: one way only (run once, printed in both columns).

Each way runs into its own run folder under ``--work``, native engine, this host's first GPU.
Prints a table (phase, old s, new s, new/old) and writes it as JSON to ``--json``.

Usage (GPU host, repository root)::

    PYTHONPATH=. python3 benchmarks/reproduce_bench.py --phases qualify,energy --rounds 2 --json out.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

PHASES = ("validate", "compare", "qualify", "energy", "profile")


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return round(time.perf_counter() - start, 3)


def run_way(phase: str, way: str, run_dir: Path, *, rounds: int, repeats: int) -> float:
    """Run *phase* the *way* (``old`` or ``new``) into *run_dir*; wall seconds."""
    from bundle.jobs import SubprocessEngine
    from bundle.phases import fixture_runner, qualify

    engine = SubprocessEngine()
    if phase == "validate":
        from bundle.phases.validate import run_validate

        return _timed(lambda: run_validate(run_dir, engine=engine, force=True))
    if phase == "compare":
        from bundle.phases.compare import run_compare

        return _timed(lambda: run_compare(run_dir, engine=engine, force=True))
    if phase == "qualify":
        runner = fixture_runner.FreshProcessRunner(engine, run_dir / ".work" / "qualify", device="cuda")
        jobs = 1 if way == "old" else 11
        return _timed(lambda: qualify.run_qualification(run_dir, device="cuda", runner=runner, force=True, jobs=jobs))
    if phase == "energy":
        from bundle.phases.energy import run_energy

        return _timed(lambda: run_energy(run_dir, engine=engine, force=True, rounds=rounds,
                                         prestart_next=way == "new"))
    if phase == "profile":
        from bundle.phases.profile import run_profile

        return _timed(lambda: run_profile(run_dir, engine=engine, force=True, repeats=repeats,
                                          **({} if way == "new" else {"overlap": 1})))
    raise SystemExit(f"reproduce_bench: unknown phase {phase!r}: use {','.join(PHASES)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--phases", default="qualify,energy,profile")
    parser.add_argument("--rounds", type=int, default=5, help="energy rounds K (protocol: 5)")
    parser.add_argument("--repeats", type=int, default=3, help="profile repeats R (protocol: 3)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/reproduce-bench"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    unknown = [p for p in phases if p not in PHASES]
    if unknown:
        print(f"reproduce_bench: unknown phase(s) {unknown}: use {','.join(PHASES)}", file=sys.stderr)
        return 2
    shutil.rmtree(args.work, ignore_errors=True)
    rows = []
    for phase in phases:
        ways = ("old", "new") if phase in ("qualify", "energy", "profile") else ("new",)
        seconds = {way: run_way(phase, way, args.work / way, rounds=args.rounds, repeats=args.repeats)
                   for way in ways}
        old, new = seconds.get("old", seconds["new"]), seconds["new"]
        rows.append({"phase": phase, "old_s": old, "new_s": new, "new_over_old": round(new / old, 3),
                     "old_way_exists": "old" in seconds})
        print(f"{phase:9s} old {old:8.1f} s   new {new:8.1f} s   new/old {new / old:6.3f}", flush=True)
    total_old, total_new = sum(r["old_s"] for r in rows), sum(r["new_s"] for r in rows)
    print(f"{'total':9s} old {total_old:8.1f} s   new {total_new:8.1f} s   new/old {total_new / total_old:6.3f}")
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows, "total_old_s": total_old, "total_new_s": total_new,
                                         "rounds": args.rounds, "repeats": args.repeats}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
