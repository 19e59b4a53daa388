#!/usr/bin/env bash
# Record one real Nsight Compute run of the fixture for the CPU tests (tests/recorded/ncu/).
#
# Runs on the GPU host, from the repository root, with the project's Python environment:
#   PYTHON=.venv/bin/python bash scripts/record_ncu.sh [NCU]     (NCU: the ncu executable; default: found as bundle.profile finds it)
#   bash scripts/record_ncu.sh --help
# Writes, for the training scope under CUBLAS_WORKSPACE_CONFIG=:16:8 (the smallest report):
#   tests/recorded/ncu/h200-fixture-training-16-8.csv          ncu's stdout + stderr
#   tests/recorded/ncu/h200-fixture-training-16-8.ncu-rep.gz   the exported report (gzip -9n)
#   tests/recorded/ncu/h200-fixture-training-16-8.version.txt  ncu --version
#   tests/recorded/ncu/h200-fixture-training-16-8.expected.json scope and S for the parser test
# The command line is built by bundle.profile (the same one the phase runs).
set -euo pipefail
case ${1:-} in
  -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "record_ncu.sh: unknown option $1: the one argument is the ncu executable (--help)" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "record_ncu.sh: $# arguments: give at most one, the ncu executable (--help)" >&2; exit 2; }
PY=${PYTHON:-python3}
DEST=tests/recorded/ncu
NAME=h200-fixture-training-16-8
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$PY" - "$WORK" "$DEST" "$NAME" "${1:-}" <<'PY'
import gzip, json, os, subprocess, sys
from pathlib import Path
from bundle import profile as p
from bundle.phases.profile import write_fixture_inputs

work, dest, name, given = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4] or None
ncu = p.find_ncu(given)
npz, config = write_fixture_inputs(work)
def run(argv, env=None):
    done = subprocess.run([a.replace("{python}", sys.executable) for a in argv], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    return done.returncode, done.stdout + done.stderr
rc, version = run(p.version_argv(ncu)); (dest / f"{name}.version.txt").write_text(version)
rc, query = run(p.query_argv(ncu))  # ~97 MB on the H200: checked, not kept here
p.check_metric_query(rc, query)
argv = p.profile_argv(ncu, str(work / "report"),
                      p.fixture_argv(str(npz), str(config), str(work / "fixture.json.gz"), "training"))
rc, output = run(argv, {"CUBLAS_WORKSPACE_CONFIG": ":16:8"})
(dest / f"{name}.csv").write_text(output)
p.check_ncu_exit("record_ncu", rc, output)
(dest / f"{name}.ncu-rep.gz").write_bytes(gzip.compress((work / "report.ncu-rep").read_bytes(), 9, mtime=0))
rows = p.parse_raw_csv(output, hit_rate_limit_percent=None)
(dest / f"{name}.expected.json").write_text(json.dumps({
    "provenance": f"recorded with {p.parse_ncu_version(version)} by scripts/record_ncu.sh: the fixture, "
                  "draw 0, :16:8, training scope",
    "scope": "training", "sequences": 1, "hit_rate_limit_percent": None}, indent=2) + "\n")
print(json.dumps(p.normalise_counters(rows, 1, "training"), indent=1))
print(json.dumps(p.cross_check_report(rows, work / "report.ncu-rep"), indent=1))
PY
ls -la "$DEST"
