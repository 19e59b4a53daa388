"""scripts/cpu_threads_probe.py: the JSON table on this CPU, and one-line refusals."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ORIGINAL_ARCHIVE, REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "cpu_threads_probe.py"
FROZEN_DRAW0 = json.loads((ORIGINAL_ARCHIVE / "results" / "draw-00.json").read_text())["metadata"]


def _probe(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=REPO_ROOT,
                          timeout=600)


def test_probe_writes_the_table_atomically(tmp_path):
    out = tmp_path / "probe" / "amd.json"
    proc = _probe("--draws", "0", "--threads", "1,2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    table = json.loads(out.read_text())
    assert json.loads(proc.stdout) == table and sorted(p.name for p in out.parent.iterdir()) == ["amd.json"]
    assert table["schema"] == "rev88-cpu-threads-probe/1" and table["cpu_model"]
    assert table["torch"] and table["draws"] == [0] and table["thread_counts"] == [1, 2]
    rows = table["rows"]
    assert [(r["draw"], r["cpu"]["torch_num_threads"]) for r in rows] == [(0, 1), (0, 2)]
    for row in rows:  # what holds on every CPU and thread count
        assert row["predictions_sha256"] == FROZEN_DRAW0["predictions_sha256"] and row["predictions_equal_frozen"]
        assert row["initial_parameter_sha256"] == FROZEN_DRAW0["initial_parameter_sha256"]
        assert row["second_invocation_state_equal"] is True
    summary = table["summary"]["draw-00"]
    assert {"initial_parameter_sha256", "epoch_permutation_sha256", "predictions_sha256"} <= set(
        summary["equal_at_every_thread_count"])
    assert set(summary["equal_at_every_thread_count"]) | set(summary["varying_across_thread_counts"]) == {
        "initial_parameter_sha256", "epoch_permutation_sha256", "final_parameter_sha256", "final_velocity_sha256",
        "state_vector_sha256", "predictions_sha256", "scores_sha256"}


def test_probe_refuses_bad_options_in_one_line(tmp_path):
    for args, needle in ((["--threads", "0"], "each count must be in 1..1024"),
                         (["--threads", "two"], "is malformed"),
                         (["--draws", "11"], "outside 0-10")):
        proc = _probe(*args, "--out", str(tmp_path / "x.json"))
        assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.json").exists()
