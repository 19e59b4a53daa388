"""Idle-adjusted energy of the fused learner at several training-program counts G, on one board, in one run.

Run from the repository root on a GPU host::

    OUT=$OUT PYTHONPATH=. python3 scripts/fused_energy_sweep.py [--rounds 3] [--ctas 1,2,4,8]
    OUT=$OUT PYTHONPATH=. python3 scripts/fused_energy_sweep.py --ctas 1,1:tf32x3,8,8:tf32x3
    OUT=$OUT PYTHONPATH=. python3 scripts/fused_energy_sweep.py --ctas 1,4:cuda,16:cuda

Arms: the frozen ``rev88`` at ``:16:8`` (the baseline of every ratio), then ``rev88-fused`` at
``:16:8`` with ``REV88_FUSED_CTAS=G`` for each G (the fixture's own launch defaults for that G:
warps, product slices), and ``REV88_FUSED_PRECISION`` where an arm names a product precision, or
``REV88_FUSED_KERNEL=cuda`` where it names the CUDA kernel tool (``G:push``: that tool with
``REV88_FUSED_EXCHANGE=push``). Every trial is one fresh fixture process (``bundle.fixture --energy
trial``), with the settings of the energy phase's ``learners`` design (settle, idle window, active
window, settle, idle window; stamps aligned to counter updates), run one after another in rotating
order (round r starts at arm r mod n). Figures come from the raw stamps through
:func:`bundle.energy.recompute_trial`; per arm the mean and 95 % t interval
(:func:`bundle.energy.summarise`), per fused arm the ratio to the baseline with its Fieller
interval (:func:`bundle.energy.ratio_of_means`). This is a measurement for choosing a default,
not an archive of the protocol: the verifier does not read it.

Writes ``$OUT/fused-energy-sweep.json`` (summary: arms, per-trial figures, each record's launch
block and board) and ``$OUT/records/*.json.gz`` (the fixture records, stamps included), the JSON
after every trial, so a stopped run keeps what it measured. ``--deadline`` stops starting trials.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bundle import archive  # noqa: E402
from bundle import energy as en  # noqa: E402
from bundle.errors import BundleError  # noqa: E402
from bundle.jobs import (  # noqa: E402
    FUSED_CTAS_ENV,
    FUSED_EXCHANGE_ENV,
    FUSED_KERNEL_ENV,
    FUSED_PRECISION_ENV,
    FUSED_PRECISIONS,
    SubprocessEngine,
)
from bundle.phases.energy import RATIO_KEYS, rotating_order  # noqa: E402
from bundle.phases.fixture_runner import draw_inputs, fixture_job, run_fixture_job, write_fixture_inputs  # noqa: E402

WORKSPACE = ":16:8"
SETTINGS = {"settle_seconds": 2.0, "idle_seconds": 3.0, "active_seconds": 10.0, "sample_interval_s": 0.05}


def _arms(ctas: list[tuple[int, str | None]]) -> list[dict]:
    arms = [{"label": "rev88 :16:8", "learner": "rev88", "ctas": None, "precision": None, "tool": None}]
    arms += [{"label": f"rev88-fused G={g}" + (f" {p}" if p else ""), "learner": "rev88-fused", "ctas": g,
              "precision": None if p in ("cuda", "push") else p, "tool": "cuda" if p in ("cuda", "push") else None,
              "exchange": "push" if p == "push" else None} for g, p in ctas]
    return arms


def _trial(engine, work: Path, npz: Path, cfg: Path, arm: dict, round_index: int, position: int) -> dict:
    stem = f"trial-{position:02d}-r{round_index:02d}-" + arm["label"].replace(" ", "-").replace(":", "").replace("=", "")
    output = work / f"{stem}.json.gz"
    settings = {"trial": round_index, **SETTINGS, "workspace_config": WORKSPACE}
    energy_cfg = archive.write_json(work / f"{stem}.energy-config.json", settings)
    extra = ("--energy", "trial", "--energy-config", str(energy_cfg))
    if arm["learner"] != "rev88":
        extra += ("--learner", arm["learner"])
    spec = fixture_job(f"sweep/{stem}", engine=engine, npz=npz, config=cfg, output=output, workspace=WORKSPACE,
                       repeats=1, extra_args=extra)
    env = {k: v for k, v in spec.env.items()
           if k not in (FUSED_CTAS_ENV, FUSED_PRECISION_ENV, FUSED_KERNEL_ENV, FUSED_EXCHANGE_ENV)}
    if arm.get("exchange"):
        env[FUSED_EXCHANGE_ENV] = arm["exchange"]
    if arm["ctas"] is not None:
        env[FUSED_CTAS_ENV] = str(arm["ctas"])
    if arm.get("precision"):
        env[FUSED_PRECISION_ENV] = arm["precision"]
    if arm.get("tool"):
        env[FUSED_KERNEL_ENV] = arm["tool"]
    spec = dataclasses.replace(spec, env=env)
    record = run_fixture_job(engine, spec, output)
    figures = en.recompute_trial(record["energy"]["trials"][0])
    learner = record.get("learner") or {}
    return {"stem": stem, "record": f"records/{stem}.json.gz", "figures": figures, "round": round_index,
            "arm": arm["label"], "board_uuid": record["energy"]["hardware"]["uuid"],
            "predictions_sha256": (record.get("metadata") or {}).get("predictions_sha256"),
            "peak_allocated_bytes": (record.get("memory") or {}).get("prepare_and_invoke_peak_allocated_bytes"),
            "launch": {k: learner.get(k) for k in ("train_programs", "train_num_warps", "kernel_source_sha256",
                                                    "triton_version", "product_precision", "kernel_tool", "exchange",
                                                    "split_update")},
            "product_slices": ((record.get("metadata") or {}).get("learner") or {}).get("product_slices")}


def _summary(arms: list[dict], trials: list[dict]) -> dict:
    out: dict = {}
    base = [t["figures"] for t in trials if t["arm"] == arms[0]["label"]]
    for arm in arms:
        mine = [t["figures"] for t in trials if t["arm"] == arm["label"]]
        if len(mine) < 2:
            continue
        entry = {k: en.summarise([f[k] for f in mine]) for k in en.PER_TASK_KEYS}
        if arm is not arms[0] and len(base) >= 2:
            entry["ratio_vs_baseline"] = {k: en.ratio_of_means([f[k] for f in mine], [f[k] for f in base])
                                          for k in RATIO_KEYS}
        out[arm["label"]] = entry
    return out


def _counts(text: str) -> list[tuple[int, str | None]]:
    """``"1,8,1:tf32x3,16:cuda"`` → [(1, None), (8, None), (1, "tf32x3"), (16, "cuda")]: G, and the product
    precision (``$REV88_FUSED_PRECISION``; None: the learner's default) or ``cuda``, the CUDA kernel tool
    (``$REV88_FUSED_KERNEL``); argparse reports anything else as a usage error."""
    values = []
    for item in text.split(","):
        g, _, precision = item.partition(":")
        try:
            values.append((int(g), precision or None))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of G or G:precision") from None
    if not values or min(g for g, _ in values) < 1 or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"{text!r}: every G must be >= 1 and each arm named once")
    bad = [p for _, p in values if p is not None and p not in (*FUSED_PRECISIONS, "cuda", "push")]
    if bad:
        raise argparse.ArgumentTypeError(f"{text!r}: {bad[0]!r} is neither a precision "
                                         f"({', '.join(FUSED_PRECISIONS)}) nor the kernel tool cuda (push: cuda with "
                                         "the pushed exchange)")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="K rounds (>= 2)")
    parser.add_argument("--ctas", type=_counts, default=_counts("1,2,4,8"),
                        help="comma-separated arms: G (training programs), G:precision (ieee, tf32x3), G:cuda or "
                             "G:push (cuda, exchange push)")
    parser.add_argument("--deadline", type=float, default=560.0, help="seconds after which no trial starts")
    args = parser.parse_args(argv)
    if args.rounds < 2:
        parser.error("--rounds must be >= 2 (an interval needs two trials per arm)")
    if not args.deadline > 0:
        parser.error("--deadline must be a positive number of seconds")
    ctas = args.ctas
    started = time.perf_counter()
    out = Path(os.environ.get("OUT") or ".")
    work = out / "records"
    work.mkdir(parents=True, exist_ok=True)
    inputs, config = draw_inputs(None, None, draw_index=0, raw_dir=None)
    npz, cfg = write_fixture_inputs(out / ".work", inputs, config)
    engine = SubprocessEngine(cwd=REPO)
    arms = _arms(ctas)
    result: dict = {"schema": "fused-energy-sweep/1", "workspace": WORKSPACE, "settings": SETTINGS,
                    "rounds": args.rounds, "draw_index": 0, "arms": arms, "trials": [], "errors": []}
    path = out / "fused-energy-sweep.json"
    for position, (round_index, arm) in enumerate(rotating_order(arms, args.rounds)):
        if time.perf_counter() - started > args.deadline:
            result["errors"].append(f"deadline {args.deadline:g} s: trial {position} and later not started")
            break
        t0 = time.perf_counter()
        try:
            trial = _trial(engine, work, npz, cfg, arm, round_index, position)
        except (BundleError, KeyError, TypeError, ValueError) as exc:   # a failed job or a malformed record
            why = str(exc) if isinstance(exc, BundleError) else f"malformed record ({type(exc).__name__}: {exc})"
            result["errors"].append(f"{arm['label']} round {round_index}: {why}")
            print(f"{arm['label']:22s} r{round_index}: ERROR {why}", flush=True)
            archive.write_json(path, result)
            continue
        trial["wall_s"] = time.perf_counter() - t0
        result["trials"].append(trial)
        f = trial["figures"]
        print(f"{arm['label']:22s} r{round_index}: {f['idle_adjusted_mj_per_task']:8.2f} mJ/task idle-adjusted, "
              f"{f['cuda_ms_per_task']:7.2f} ms/task, idle {f['paired_idle_w']:.1f} W ({trial['wall_s']:.1f} s)",
              flush=True)
        result["summary"] = _summary(arms, result["trials"])
        result["boards"] = sorted({t["board_uuid"] for t in result["trials"]})
        result["wall_s"] = time.perf_counter() - started
        archive.write_json(path, result)
    frozen = json.loads((REPO / "evidence" / "rev88-original" / "results" / "draw-00.json").read_text())
    result["predictions_equal_frozen_draw0"] = {t["stem"]: t["predictions_sha256"] == frozen["metadata"][
        "predictions_sha256"] for t in result["trials"]}
    result["wall_s"] = time.perf_counter() - started
    archive.write_json(path, result)
    print(f"predictions equal to the frozen draw 0: {sum(result['predictions_equal_frozen_draw0'].values())}"
          f"/{len(result['trials'])} trials")
    for arm in arms:
        if arm["label"] not in (result.get("summary") or {}):
            print(f"{arm['label']:22s} fewer than 2 trials: no summary", flush=True)
    for label, entry in (result.get("summary") or {}).items():
        s = entry["idle_adjusted_mj_per_task"]
        r = (entry.get("ratio_vs_baseline") or {}).get("idle_adjusted_mj_per_task")
        ratio = f" ratio {r['ratio']:.3f} [{r['ci95_low']:.3f}, {r['ci95_high']:.3f}]" if r and r["bounded"] else ""
        print(f"{label:22s} {s['mean']:8.2f} [{s['ci95_low']:.2f}, {s['ci95_high']:.2f}] mJ/task, "
              f"{entry['cuda_ms_per_task']['mean']:.2f} ms/task{ratio}")
    print(f"wrote {path}")
    return 0 if not result["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
