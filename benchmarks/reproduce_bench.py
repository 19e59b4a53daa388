"""Per-phase wall time of a reproduce, the old way against the new way, on one GPU.

Old and new differ where a phase's old way still exists (see docs/protocol.md §8.4):

* validate: its four jobs one after another (``concurrent=False``) against the worker and the
  two refusals at once, then the CLI job alone;
* compare: the three fresh processes one after another (``prestart_next=False``) against the
  next one pre-started behind the board's GPU lock;
* qualify: the 11 fresh draw processes one after another (``jobs=1``) against all at once;
* energy: each interleaved trial's process started after the previous one exited, against the
  next one pre-started behind the board's GPU lock (``prestart_next``);
* profile: one ncu run at a time (``overlap=1``) against the phase's default (two runs started at
  once under the whole-process GPU lock; ``rev88 profile --lock-scope range`` is the faster way
  that shares the board during preparations, measured to change L2 read counts, docs/protocol.md §8.4).

Two modes.

``run``: each requested way of each phase runs into its own run folder under ``--work``, native
engine, this host's first GPU; ``--json`` is rewritten after every finished (phase, way), with the
board's UUID, so a call cut short keeps what it finished (a rerun with the same file starts it
afresh)::

    PYTHONPATH=. python3 benchmarks/reproduce_bench.py run --phases qualify,profile --ways old,new --json a.json

``table``: the side-by-side table (phase, old s, new s, new/old) from one or more such JSON files
and, with ``--new-from RUN_DIR``, the new way taken from a ``rev88 reproduce`` run folder's own
record of its phases (``environment.json.gz``, ``reproduce_invocations``): a whole reproduce
does not fit in one device call beside the old ways. It refuses figures from different boards::

    python3 benchmarks/reproduce_bench.py table a.json b.json --new-from .device/h200-20261202
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

PHASES = ("validate", "compare", "qualify", "energy", "profile")
WAYS = ("old", "new")


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return round(time.perf_counter() - start, 3)


def run_way(phase: str, way: str, run_dir: Path, *, rounds: int, repeats: int) -> float:
    """Run *phase* the *way* (``old`` or ``new``) into *run_dir*; wall seconds."""
    from bundle.jobs import SubprocessEngine
    from bundle.phases import fixture_runner, qualify

    engine = SubprocessEngine()
    new = way == "new"
    if phase == "validate":
        from bundle.phases.validate import run_validate

        return _timed(lambda: run_validate(run_dir, engine=engine, force=True, concurrent=new))
    if phase == "compare":
        from bundle.phases.compare import run_compare

        return _timed(lambda: run_compare(run_dir, engine=engine, force=True, prestart_next=new))
    if phase == "qualify":
        runner = fixture_runner.FreshProcessRunner(engine, run_dir / ".work" / "qualify", device="cuda")
        jobs = 11 if new else 1
        return _timed(lambda: qualify.run_qualification(run_dir, device="cuda", runner=runner, force=True, jobs=jobs))
    if phase == "energy":
        from bundle.phases.energy import run_energy

        return _timed(lambda: run_energy(run_dir, engine=engine, force=True, rounds=rounds, prestart_next=new))
    if phase == "profile":
        from bundle.phases.profile import run_profile

        return _timed(lambda: run_profile(run_dir, engine=engine, force=True, repeats=repeats,
                                          **({} if new else {"overlap": 1})))
    raise SystemExit(f"reproduce_bench: unknown phase {phase!r}: use {','.join(PHASES)}")


def first_board_uuid() -> str | None:
    """UUID of the board the native engine's jobs land on (this host's first GPU), or None."""
    from bundle.boards import discover

    boards = discover()
    return boards[0].uuid if boards else None


def _write_json(path: Path, payload: dict) -> None:
    from bundle.archive import atomic_write_bytes

    atomic_write_bytes(path, json.dumps(payload, indent=1).encode())


def _split(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    items = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in items if p not in allowed]
    if unknown or not items:
        raise SystemExit(f"reproduce_bench: unknown or no {what} {unknown or text!r}: use {','.join(allowed)}")
    return items


def cmd_run(args: argparse.Namespace) -> int:
    phases = _split(args.phases, PHASES, "phase(s)")
    ways = _split(args.ways, WAYS, "way(s)")
    if args.work.exists() and not set(p.name for p in args.work.iterdir()) <= set(WAYS):
        raise SystemExit(f"reproduce_bench: {args.work} holds more than this benchmark's old/new run folders: "
                         "give an empty or new --work folder")
    shutil.rmtree(args.work, ignore_errors=True)
    board = first_board_uuid()
    payload = {"board_uuid": board, "rounds": args.rounds, "repeats": args.repeats, "rows": []}
    for phase in phases:
        for way in ways:
            seconds = run_way(phase, way, args.work / way, rounds=args.rounds, repeats=args.repeats)
            payload["rows"].append({"phase": phase, "way": way, "seconds": seconds, "board_uuid": board,
                                    "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
            print(f"{phase:9s} {way:3s} {seconds:8.1f} s  board {board}", flush=True)
            if args.json is not None:
                _write_json(args.json, payload)
    return 0


def reproduce_phase_seconds(run_dir: Path) -> tuple[dict[str, float], set[str]]:
    """Each phase's ``duration_s`` from the run folder's reproduce invocations (the one that ran it).

    Returns the durations and the board UUIDs of those invocations.

    Raises:
        SystemExit: no readable ``environment.json.gz`` or no reproduce invocation in it.
    """
    path = run_dir / "environment.json.gz"
    from bundle.archive import read_json_gz
    from protocol.errors import BundleError

    try:
        env = read_json_gz(path)
    except BundleError as exc:
        raise SystemExit(f"reproduce_bench: {exc}: give a rev88 reproduce run folder") from None
    seconds, boards = {}, set()
    for inv in env.get("reproduce_invocations") or []:
        for phase in inv.get("phases") or []:
            if phase.get("status") == "ran":
                seconds[phase["phase"]] = float(phase["duration_s"])
                boards.update(b.get("uuid") for b in inv.get("boards") or [])
    if not seconds:
        raise SystemExit(f"reproduce_bench: {path} records no phase that a reproduce invocation ran")
    return seconds, boards


def _rows(path: Path) -> list[tuple[str, str, float, str | None]]:
    """(phase, way, seconds, board) of a run-mode JSON file; SystemExit with one line when malformed."""
    try:
        payload = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"reproduce_bench: cannot read {path} ({exc}): give run-mode JSON files") from None
    rows = payload.get("rows") if isinstance(payload, dict) else None
    if not isinstance(rows, list):
        raise SystemExit(f"reproduce_bench: {path} has no 'rows' list: give a JSON file that 'run' wrote")
    out = []
    for k, row in enumerate(rows):
        ok = (isinstance(row, dict) and row.get("phase") in PHASES and row.get("way") in WAYS
              and isinstance(row.get("seconds"), (int, float)) and not isinstance(row.get("seconds"), bool)
              and row["seconds"] > 0)
        if not ok:
            raise SystemExit(f"reproduce_bench: {path} row {k} is not a phase ({','.join(PHASES)}), a way "
                             f"({','.join(WAYS)}) and positive seconds: {row!r}")
        out.append((row["phase"], row["way"], float(row["seconds"]), row.get("board_uuid")))
    return out


def profile_way(run_dir: Path) -> str | None:
    """How the run folder's profile held the board (``placement.gpu_lock_scope``, else the runs' text), or None."""
    path = run_dir / "profile" / "profiles.json.gz"
    if not path.is_file():
        return None
    from bundle.archive import read_json_gz

    summary = read_json_gz(path)
    placement = summary.get("placement") or {}
    from protocol.profile_texts import GPU_LOCK_TEXT

    scope = placement.get("gpu_lock_scope") or next(
        (k for k, text in GPU_LOCK_TEXT.items() if text == placement.get("gpu_lock")), "unknown scope")
    way = f"--lock-scope {scope}, {placement.get('ncu_runs_started_at_once_per_board')} at once"
    resumed = summary.get("resumed_runs") or []
    if resumed:
        way += (f"; partial: {len(resumed)} of {len(summary.get('order') or [])} runs were resumed from an "
                "earlier invocation this figure does not time")
    return way


def cmd_table(args: argparse.Namespace) -> int:
    if not args.files and args.new_from is None:
        raise SystemExit("reproduce_bench: nothing to table: give run-mode JSON files and/or --new-from RUN_DIR")
    figures: dict[tuple[str, str], float] = {}
    boards: set[str | None] = set()
    for path in args.files:
        for phase, way, seconds, board in _rows(path):
            figures[(phase, way)] = seconds
            boards.add(board)
    notes = {}
    if args.new_from is not None:
        seconds, run_boards = reproduce_phase_seconds(args.new_from)
        if not run_boards:
            raise SystemExit(f"reproduce_bench: {args.new_from}'s reproduce invocations name no board (run without "
                             "--gpus): its phases cannot be tied to the board of the old ways")
        boards |= run_boards
        figures.update({(phase, "new"): s for phase, s in seconds.items()})
        if "profile" in seconds:
            notes["profile"] = profile_way(args.new_from)
    if len(boards) != 1 or None in boards:
        raise SystemExit(f"reproduce_bench: the figures come from boards {sorted(map(str, boards))}: old and new "
                         "must be measured on one board")
    rows = []
    for phase in PHASES:
        new = figures.get((phase, "new"))
        if new is None:
            if (phase, "old") in figures:
                print(f"{phase:9s} old {figures[(phase, 'old')]:8.1f} s   new        — s   (no new figure)")
            continue
        old = figures.get((phase, "old"))
        partial = "partial:" in (notes.get(phase) or "")
        rows.append({"phase": phase, "old_s": old, "new_s": new,
                     "new_over_old": None if old is None or partial else round(new / old, 3),
                     **({"new_way": notes[phase]} if notes.get(phase) else {}),
                     **({"new_is_partial": True} if partial else {})})
        old_text = "       —" if old is None else f"{old:8.1f}"
        ratio = "     —" if old is None or partial else f"{new / old:6.3f}"
        note = f"   (new: {notes[phase]})" if notes.get(phase) else ""
        print(f"{phase:9s} old {old_text} s   new {new:8.1f} s   new/old {ratio}{note}")
    if not rows:
        raise SystemExit("reproduce_bench: no phase has a new figure: add a run-mode file with 'new' rows or --new-from")
    with_old = [r for r in rows if r["old_s"] is not None]
    total_new = sum(r["new_s"] for r in rows)
    total_old = sum(r["old_s"] if r["old_s"] is not None else r["new_s"] for r in rows)
    lower = any(r.get("new_is_partial") for r in rows)
    print(f"{'total':9s} old {'>' if lower else ' '}{total_old:7.1f} s   new {'>' if lower else ' '}{total_new:7.1f} s   new/old "
          f"{'     —' if lower else f'{total_new / total_old:6.3f}'}"
          f"   (a phase without an old figure counts its new one in both columns; {len(with_old)} with both"
          f"{'; a partial phase makes the totals lower bounds' if lower else ''})")
    print(f"board {boards.pop()}")
    if args.json is not None:
        _write_json(args.json, {"rows": rows, "total_old_s": total_old, "total_new_s": total_new,
                                **({"totals_are_lower_bounds": True} if lower else {})})
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    run = sub.add_parser("run", help="run phases the old and/or new way on this host's first GPU")
    run.add_argument("--phases", default="qualify,energy,profile")
    run.add_argument("--ways", default="old,new")
    run.add_argument("--rounds", type=int, default=5, help="energy rounds K (protocol: 5)")
    run.add_argument("--repeats", type=int, default=3, help="profile repeats R (protocol: 3)")
    run.add_argument("--work", type=Path, default=Path("/tmp/reproduce-bench"))
    run.add_argument("--json", type=Path, default=None)
    table = sub.add_parser("table", help="print old against new from run-mode JSON files (and a reproduce run)")
    table.add_argument("files", nargs="*", type=Path)
    table.add_argument("--new-from", type=Path, default=None, help="a rev88 reproduce run folder")
    table.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    return cmd_run(args) if args.mode == "run" else cmd_table(args)


if __name__ == "__main__":
    sys.exit(main())
