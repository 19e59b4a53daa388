"""`rev88 reproduce` stopped by SIGTERM (a `timeout` or a scheduler): recorded, not lost.

A real CLI process on the CPU (``--device cpu --phases compare``: three fresh fixture processes,
each in its own session) gets SIGTERM once a fixture job runs. It must kill those jobs,
record the invocation as ``interrupted`` with the phase's stamps, leave no complete phase folder
and exit 143 with one line.
"""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, processes


def _jobs_of(parent: int, run_dir: Path) -> list[int]:
    """Processes other than *parent* whose command line names *run_dir* (the phase's fixture jobs)."""
    return [p.pid for p in processes(str(run_dir)) if p.pid != parent]


def _not_stopped(run_dir: Path) -> list[int]:
    """Processes naming *run_dir* still running on their own (neither gone, dead nor killed)."""
    return [p.pid for p in processes(str(run_dir)) if not p.stopped]


SAFETY_S = 600
"""Only against a hang (no job ever starting, a stop that never ends): reaching it is a failure of
behaviour, never of speed."""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs Linux /proc")
def test_sigterm_kills_the_jobs_and_records_the_invocation(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    run_dir = tmp_path / "stopped-run"
    proc = subprocess.Popen([sys.executable, "-m", "bundle.cli", "reproduce", "--engine", "native", "--device", "cpu",
                             "--phases", "compare", "--out", str(run_dir)], cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + SAFETY_S
    while time.monotonic() < deadline and proc.poll() is None and not _jobs_of(proc.pid, run_dir):
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    assert _jobs_of(proc.pid, run_dir), f"no fixture job started within {SAFETY_S} s"
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=SAFETY_S)
    assert proc.returncode == 143, (out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1].startswith("rev88: error: reproduce stopped by SIGTERM: its running jobs were killed"), err
    assert "Traceback" not in err
    assert _not_stopped(run_dir) == []  # no fixture job outlives the stop
    env = json.loads(gzip.decompress((run_dir / "environment.json.gz").read_bytes()))
    (invocation,) = env["reproduce_invocations"]
    assert invocation["status"] == "interrupted"
    (phase,) = invocation["phases"]
    assert phase["phase"] == "compare" and phase["status"] == "interrupted"
    assert phase["started_at_utc"] <= phase["finished_at_utc"] <= invocation["finished_at_utc"]
    assert not (run_dir / "compare").exists()  # no phase folder that looks complete


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs Linux /proc")
def test_sigterm_stops_a_phase_command_and_its_jobs(tmp_path: Path) -> None:
    """`rev88 compare --device cpu` stopped by SIGTERM: one line, exit 143, no fixture job left running."""
    pytest.importorskip("torch")
    run_dir = tmp_path / "stopped-compare"
    proc = subprocess.Popen([sys.executable, "-m", "bundle.cli", "compare", "--out", str(run_dir), "--device", "cpu"],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + SAFETY_S
    while time.monotonic() < deadline and proc.poll() is None and not _jobs_of(proc.pid, run_dir):
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    assert _jobs_of(proc.pid, run_dir), f"no fixture job started within {SAFETY_S} s"
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGTERM)  # a second one during the cleanup changes nothing
    out, err = proc.communicate(timeout=SAFETY_S)
    assert proc.returncode == 143, (out, err)
    assert err.strip().splitlines()[-1].startswith("rev88: error: stopped by SIGTERM: running jobs were stopped")
    assert "Traceback" not in err
    assert _not_stopped(run_dir) == []
    assert not (run_dir / "compare").exists()
