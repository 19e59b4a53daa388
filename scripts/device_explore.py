"""Where the time of a GPU reproduce goes: one device call, results as JSON under $OUT.

Measures, on the GPU host it runs on (native, this checkout on PYTHONPATH):

* interpreter + ``import torch`` and ``torch.cuda.init()`` alone;
* the fixture alone (fresh process, ``:16:8``) with its step timeline;
* one task-scope and one training-scope ``ncu`` run with the phase's command and with candidate
  options, with the fixture's timeline of every replay pass and the counters of each;
* the 11 qualification draws as fresh processes, one after another and all at once.

Usage: ``OUT=dir PYTHONPATH=. python3 scripts/device_explore.py [--skip-ncu] [--skip-qualify]``.
Nothing here is evidence; it decides what the phases do.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bundle import profile as counters
from bundle.data import load_draw
from bundle.learner import FROZEN_CONFIG
from bundle.phases.fixture_runner import write_fixture_inputs

ROOT = Path(__file__).resolve().parents[1]


def timed(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> dict:
    """Run *argv*; wall seconds, return code, the fixture timeline lines and the last output lines."""
    start = time.perf_counter()
    proc = subprocess.run(argv, env={**os.environ, **(env or {})}, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    out = proc.stdout + proc.stderr
    return {"argv": argv, "env": env or {}, "rc": proc.returncode, "wall_s": round(wall, 3),
            "timelines": [ln for ln in out.splitlines() if "fixture timeline" in ln],
            "tail": out.splitlines()[-6:], "output": out}


def counters_of(output: str, sequences: int, scope: str) -> dict | None:
    try:
        rows = counters.parse_raw_csv(output)
    except Exception as exc:  # noqa: BLE001  (exploration: record and go on)
        return {"error": str(exc)}
    figures = counters.normalise_counters(rows, sequences, scope)
    return {"metrics": {k: v.value for k, v in rows.metrics.items()}, "figures": figures,
            "passes": counters.replay_pass_counts(rows, output)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-ncu", action="store_true")
    parser.add_argument("--skip-qualify", action="store_true")
    parser.add_argument("--variants", default="phase,application-only")
    args = parser.parse_args()
    out = Path(os.environ.get("OUT", "/tmp/explore-out"))
    out.mkdir(parents=True, exist_ok=True)
    work = Path("/tmp/explore")
    work.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    result: dict = {"started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

    def save() -> None:
        (out / "explore.json").write_text(json.dumps(result, indent=1))

    result["nvidia_smi"] = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    ncu = counters.find_ncu(None)
    result["ncu_version"] = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout
    (out / "ncu-help.txt").write_text(subprocess.run([ncu, "--help"], capture_output=True, text=True).stdout)

    inputs = {}
    for draw in range(11):
        npz, cfg = write_fixture_inputs(work / f"draw-{draw:02d}", load_draw(draw).learner_inputs(), FROZEN_CONFIG)
        inputs[draw] = (npz, cfg)
    ws = {"CUBLAS_WORKSPACE_CONFIG": ":16:8"}
    result["import_torch"] = timed([py, "-c", "import torch"])
    result["import_torch_cuda_init"] = timed([py, "-c", "import torch; torch.cuda.init(); torch.zeros(1, device='cuda')"])
    npz, cfg = inputs[0]
    fixture = [py, "-m", "bundle.fixture", "--input", str(npz), "--config", str(cfg), "--mode", "measure"]
    result["fixture_alone"] = [timed([*fixture, "--output", str(work / f"alone-{i}.json.gz")], ws, ROOT)
                               for i in range(2)]
    for item in result["fixture_alone"]:
        item.pop("output")
    save()
    print("fixture alone:", [r["wall_s"] for r in result["fixture_alone"]], flush=True)

    if not args.skip_ncu:
        result["ncu"] = []
        extra = {"phase": (), "application-only": ("--target-processes", "application-only")}
        for scope in ("task", "training"):
            for variant in args.variants.split(","):
                base = work / f"ncu-{scope}-{variant}"
                target = counters.fixture_argv(str(npz), str(cfg), str(base) + ".fixture.json.gz", scope)
                target = tuple(py if a == "{python}" else a for a in target)
                argv = [ncu, *extra[variant], *counters.NCU_PROFILE_FLAGS, "--export", str(base), *target]
                run = timed(argv, ws, ROOT)
                run["variant"], run["scope"] = variant, scope
                run["counters"] = counters_of(run.pop("output"), counters.SEQUENCES_IN_RANGE[scope], scope)
                rep = Path(str(base) + ".ncu-rep")
                run["report_bytes"] = rep.stat().st_size if rep.is_file() else None
                result["ncu"].append(run)
                save()
                print("ncu", scope, variant, run["wall_s"], run["rc"], flush=True)

    if not args.skip_qualify:
        def launch(draw: int, tag: str) -> subprocess.Popen:
            npz_d, cfg_d = inputs[draw]
            argv = [py, "-m", "bundle.fixture", "--input", str(npz_d), "--config", str(cfg_d), "--mode", "measure",
                    "--output", str(work / f"q-{tag}-{draw:02d}.json.gz")]
            return subprocess.Popen(argv, env={**os.environ, **ws}, cwd=ROOT, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)

        for tag, width in (("concurrent11", 11), ("concurrent6", 6)):
            start = time.perf_counter()
            procs: dict[int, tuple[subprocess.Popen, float]] = {}
            ends: dict[int, float] = {}
            pending = list(range(11))
            while pending or procs:
                while pending and len(procs) < width:
                    draw = pending.pop(0)
                    procs[draw] = (launch(draw, tag), time.perf_counter())
                for draw, (proc, began) in list(procs.items()):
                    if proc.poll() is not None:
                        ends[draw] = time.perf_counter() - began
                        del procs[draw]
                time.sleep(0.05)
            wall = time.perf_counter() - start
            preds = {}
            for draw in range(11):
                path = work / f"q-{tag}-{draw:02d}.json.gz"
                if path.is_file():
                    import gzip  # noqa: PLC0415

                    rec = json.loads(gzip.decompress(path.read_bytes()))
                    preds[draw] = {"predictions_sha256": rec["metadata"]["predictions_sha256"],
                                   "peak": rec["memory"]["prepare_and_invoke_peak_allocated_bytes"],
                                   "first_invocation_cuda_ms": rec["timing"]["first_invocation_cuda_ms"],
                                   "timeline": rec.get("timeline")}
            frozen = {d: json.loads((ROOT / "evidence/rev88-original/results" / f"draw-{d:02d}.json").read_text())
                      ["metadata"]["predictions_sha256"] for d in range(11)}
            result[tag] = {"width": width, "wall_s": round(wall, 3), "per_process_s": ends, "draws": preds,
                           "frozen_equal": sum(preds.get(d, {}).get("predictions_sha256") == frozen[d]
                                               for d in range(11))}
            save()
            print(tag, round(wall, 1), "frozen equal", result[tag]["frozen_equal"], flush=True)
    result["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
