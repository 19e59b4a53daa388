"""How the wall time of a full reproduce scales with the number of boards (``--gpus``).

B = 1 is what an archive measured (``environment.json.gz`` → ``reproduce_invocations``, the
phases' recorded durations). B > 1 is a model built from the same archive's per-job times, stated
as a model, not measured (the multi-board device run is a separate issue):

* validate, compare: on the first board only — unchanged;
* qualify: draw i on board i mod B, all at once; the phase's time beyond its slowest draw (job
  start, inputs, scoring) stays, the draws' part scales with a board's share ceil(11 / B) / 11 of
  the slowest draw, but never below the fastest draw recorded;
* energy: one whole interleaved design per board, all at the same time — unchanged wall time,
  B designs (and a between-board spread) instead of one;
* profile: ncu run k on board k mod B; the busiest board has ceil(R·4 / B) runs, so the phase
  scales by that over R·4, but never below the longest single run recorded.

Usage: ``python benchmarks/scaling_bench.py [ARCHIVE] [--boards 1,2,4,8]`` (no GPU, no torch).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _json(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def measured(archive: Path) -> dict[str, float]:
    """Per-phase seconds of the invocations that ran each phase (the last one wins)."""
    env = _json(archive / "environment.json.gz")
    out: dict[str, float] = {}
    for inv in env.get("reproduce_invocations") or []:
        for p in inv["phases"]:
            if p["status"] == "ran":
                out[p["phase"]] = float(p["duration_s"])
    if not out:
        raise SystemExit(f"scaling_bench: {archive} records no reproduce invocation: use an archive made by "
                         "`rev88 reproduce` since 2026-12-01")
    return out


def resumed_runs(archive: Path) -> list[str]:
    """The profile runs the archive's last profile invocation resumed instead of timing (``resumed_runs``)."""
    path = archive / "profile" / "profiles.json.gz"
    return list(_json(path).get("resumed_runs") or []) if path.is_file() else []


def model(archive: Path, phases: dict[str, float], boards: int) -> dict[str, float]:
    """Modelled per-phase seconds on *boards* boards (see the module docstring)."""
    out = dict(phases)
    draws = sorted((archive / "qualify").glob("draw-*.json.gz"))
    if "qualify" in phases and draws:
        times = [_json(d)["timing"]["runner_wall_seconds"] for d in draws]
        slowest, fastest = max(times), min(times)
        overhead = max(0.0, phases["qualify"] - slowest)  # job start, inputs, scoring: not per draw
        out["qualify"] = overhead + max(fastest, slowest * math.ceil(len(draws) / boards) / len(draws))
    runs = [p for p in sorted((archive / "profile").glob("workspace-*-r[0-9][0-9].json.gz"))]
    if "profile" in phases and runs:
        longest = max(_json(r)["duration_s"] for r in runs)
        out["profile"] = max(longest, phases["profile"] * math.ceil(len(runs) / boards) / len(runs))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("archive", nargs="?", type=Path, default=REPO / "evidence" / "h200-20261202")
    parser.add_argument("--boards", default="1,2,4,8")
    args = parser.parse_args(argv)
    try:
        counts = [int(b) for b in args.boards.split(",")]
    except ValueError:
        print(f"scaling_bench: --boards {args.boards!r} is not a comma-separated list of counts", file=sys.stderr)
        return 2
    if not (args.archive / "environment.json.gz").is_file():
        print(f"scaling_bench: {args.archive} is not a run archive (no environment.json.gz)", file=sys.stderr)
        return 2
    phases = measured(args.archive)
    resumed = resumed_runs(args.archive)
    if resumed and "profile" in phases:
        # the recorded profile duration times only the runs its invocation ran: neither a phase time
        # nor a basis for the model, so the profile is left out and the totals say so
        print(f"scaling_bench: {args.archive}'s profile resumed {len(resumed)} runs from an earlier invocation "
              f"that its recorded {phases.pop('profile'):.1f} s do not time: profile left out of the table")
    names = [p for p in ("validate", "compare", "qualify", "energy", "profile") if p in phases]
    label = "total s" if "profile" in phases else "w/o prof."
    print(f"{'boards':>6} {'kind':>9} " + " ".join(f"{n:>9}" for n in names) + f" {label:>9} {'min':>6}")
    for b in counts:
        figures = phases if b == 1 else model(args.archive, phases, b)
        total = sum(figures[n] for n in names)
        print(f"{b:>6} {'measured' if b == 1 else 'model':>9} " + " ".join(f"{figures[n]:9.1f}" for n in names)
              + f" {total:9.1f} {total / 60:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
