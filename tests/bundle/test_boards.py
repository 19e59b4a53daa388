"""Board selection and per-board placement (bundle.boards), on CPU with fake board ids.

The fake ids are what each job is *given*; the fixture records them, so these tests read the
placement back from real fixture processes (CPU diagnostic) and real qualification records.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from bundle import boards
from bundle.jobs import SubprocessEngine
from protocol.errors import BundleError

HOST = [boards.Board(0, "GPU-aaaa-0000", "00000000:19:00.0", "NVIDIA H200"),
        boards.Board(1, "GPU-bbbb-1111", "00000000:3B:00.0", "NVIDIA H200"),
        boards.Board(2, "GPU-cccc-2222", "00000000:4C:00.0", "NVIDIA H200")]


def test_select_all_count_and_ids() -> None:
    assert boards.select("all", HOST) == HOST
    assert boards.select("2", HOST) == HOST[:2]
    assert boards.select("2,0", HOST) == [HOST[2], HOST[0]]
    assert boards.select("GPU-bbbb-1111", HOST) == [HOST[1]]
    assert boards.select("GPU-fake-a,GPU-fake-b", None) == [boards.Board(None, "GPU-fake-a"),
                                                            boards.Board(None, "GPU-fake-b")]


@pytest.mark.parametrize(("spec", "available", "needle"), [
    ("", HOST, "empty"), ("4", HOST, "has 3 board"), ("0", HOST, "has 3 board"), ("1,1", HOST, "twice"),
    ("GPU-dddd", HOST, "no board GPU-dddd"), ("bus0", HOST, "neither"), ("all", None, "none can be listed"),
    ("0", None, "needs the host's boards"), ("all", [], "lists no GPU board"),
])
def test_select_refuses_in_one_line(spec: str, available: list | None, needle: str) -> None:
    with pytest.raises(BundleError, match=needle) as info:
        boards.select(spec, available)
    assert "\n" not in str(info.value)


def test_placement_env() -> None:
    assert boards.placement_env(None) == {}
    assert boards.placement_env(HOST[1], "/r/.work/gpu.lock") == {
        "CUDA_VISIBLE_DEVICES": "GPU-bbbb-1111", "REV88_BOARD_UUID": "GPU-bbbb-1111", "REV88_GPU_LOCK": "/r/.work/gpu.lock"}


def test_qualification_places_draw_i_on_board_i_mod_b(tmp_path: Path) -> None:
    """Four draws, two fake boards, two at once: each fixture process records the board it was given."""
    import threading

    from bundle.phases.fixture_runner import FreshProcessRunner
    from bundle.phases.qualify import run_qualification

    fake = [boards.Board(None, "GPU-fake-a"), boards.Board(None, "GPU-fake-b")]
    fresh = FreshProcessRunner(SubprocessEngine(), tmp_path / "work", device="cpu", boards=fake)
    together = threading.Barrier(2, timeout=SAFETY_S)

    def runner(draw_index, inputs):  # draws 0 and 1 start together, so their runs overlap whatever the load
        if draw_index in (0, 1):
            together.wait()
        return fresh(draw_index, inputs)

    result = run_qualification(tmp_path / "run", device="cpu", draws=[0, 1, 2, 3], runner=runner, jobs=2)
    for draw, record in result["records"].items():
        placement = record["fixture"]["placement"]
        want = fake[draw % 2].uuid
        assert placement["given_board_uuid"] == want and placement["cuda_visible_devices"] == want
        assert placement["board_uuid"] is None  # CPU: no board is found, only the given one recorded
        assert record["concurrency"]["jobs"] == 2
        assert record["concurrency"]["ran_alone"] is (not record["concurrency"]["overlapping_draws"])
    stored = json.loads(gzip.decompress((tmp_path / "run/qualify/draw-03.json.gz").read_bytes()))
    assert stored["fixture"]["placement"]["given_board_uuid"] == "GPU-fake-b"
    # with two at once, the draws that started together overlapped in time (and were recorded so)
    assert 1 in result["records"][0]["concurrency"]["overlapping_draws"]
    assert 0 in result["records"][1]["concurrency"]["overlapping_draws"]


def test_overlaps_from_spans() -> None:
    from bundle.phases.qualify import overlaps

    assert overlaps({0: (0.0, 2.0), 1: (1.0, 3.0), 2: (3.0, 4.0)}) == {0: [1], 1: [0], 2: []}


SAFETY_S = 600.0
"""Only against a hang: a test that reaches it failed on behaviour (a lock never taken or never
released), never on speed."""


def _wait_for(condition, what: str) -> None:
    import time

    deadline = time.monotonic() + SAFETY_S
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def _blocked_on_flock(pid: int) -> bool:
    """Whether process *pid* waits for a ``flock`` (a ``->`` entry in /proc/locks)."""
    return any(line.split()[1:3] == ["->", "FLOCK"] and line.split()[5] == str(pid)
               for line in Path("/proc/locks").read_text().splitlines())


_LOCK_HOLDER = """
import sys
from bundle.fixture import Timeline, acquire_gpu_lock
info = acquire_gpu_lock(Timeline())
with open(sys.argv[1], "a") as log:
    log.write(sys.argv[2] + " acquired " + str(info["waited_s"]) + "\\n")
sys.stdin.read()                          # hold the lock until the test closes stdin
with open(sys.argv[1], "a") as log:
    log.write(sys.argv[2] + " exits\\n")
"""


@pytest.mark.skipif(not Path("/proc/locks").is_file(), reason="reads the kernel's lock table (Linux)")
def test_gpu_lock_serialises_processes(tmp_path: Path) -> None:
    """Two processes with one REV88_GPU_LOCK: the second blocks on the lock while the first holds it and
    takes it only once the first has exited (events in order, no timing)."""
    import os
    import subprocess
    import sys

    lock, log = tmp_path / "gpu.lock", tmp_path / "events.txt"
    env = {**os.environ, "REV88_GPU_LOCK": str(lock)}

    def start(name: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", _LOCK_HOLDER, str(log), name], env=env,
                                stdin=subprocess.PIPE, text=True)

    def events() -> list[str]:
        return [" ".join(line.split()[:2]) for line in log.read_text().splitlines()] if log.is_file() else []

    first = start("first")
    try:
        _wait_for(lambda: events() == ["first acquired"], "the first process took the lock")
        second = start("second")
        try:
            _wait_for(lambda: _blocked_on_flock(second.pid) or events() != ["first acquired"],
                      "the second process asked for the lock")
            assert events() == ["first acquired"]  # the second waits: it did not take the lock beside the first
            first.communicate("")  # the first releases its lock by exiting
            second.communicate("")
        finally:
            second.kill()
    finally:
        first.kill()
    assert first.returncode == 0 and second.returncode == 0
    assert events() == ["first acquired", "first exits", "second acquired", "second exits"]
    waited = float(log.read_text().splitlines()[2].split()[2])
    assert waited > 0


_RANGE_JOB = """
import json, os, sys, time
from pathlib import Path
from bundle.fixture import Timeline, acquire_gpu_lock, exclusive_gpu_lock
here, me, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
t = Timeline()
info = acquire_gpu_lock(t, "profile")
(here / f"shared-{me}").touch()           # 'preparation' under the shared lock: it ends only once every
deadline = time.monotonic() + 600         # job holds the shared lock at once (a barrier, no timing)
while len(list(here.glob("shared-*"))) < n:
    if time.monotonic() > deadline:
        sys.exit("the shared lock never let every job in at once")
    time.sleep(0.01)
exclusive_gpu_lock(info, t)
with open(here / "log", "a") as log:      # 'warm-ups and range': alone on the board
    log.write(f"enter {me}\\n")
    log.flush()
    time.sleep(0.2)                       # room for another job to enter, were the lock not exclusive
    log.write(f"leave {me}\\n")
print(json.dumps({"info": info}))
"""


def _range_jobs(tmp_path: Path, n: int) -> tuple[list[dict], list[str]]:
    import json
    import os
    import subprocess
    import sys

    lock = tmp_path / "gpu.lock"
    env = {**os.environ, **boards.placement_env(None, str(lock), lock_scope="range")}
    procs = [subprocess.Popen([sys.executable, "-c", _RANGE_JOB, str(tmp_path), str(k), str(n)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(n)]
    outs = [p.communicate(timeout=SAFETY_S) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    return [json.loads(o[0]) for o in outs], (tmp_path / "log").read_text().split("\n")[:-1]


def test_range_lock_overlaps_preparations_but_never_a_range(tmp_path: Path) -> None:
    """Three real processes with the profile's range-scoped lock: all three hold the shared lock at
    once (each waits for the others before it asks for the exclusive one), and the exclusive parts
    come one after another, never two at once (the order of their enter/leave events)."""
    jobs, log = _range_jobs(tmp_path, 3)
    for j in jobs:
        assert j["info"]["scope"] == "range" and j["info"]["ticket"] is None
        assert j["info"]["exclusive"]["acquired_at_s"] >= j["info"]["acquired_at_s"]
    assert len(log) == 6
    for k in range(0, 6, 2):  # enter a, leave a, enter b, leave b, ...
        assert log[k].split()[0] == "enter" and log[k + 1] == f"leave {log[k].split()[1]}", log
    assert sorted(line.split()[1] for line in log[::2]) == ["0", "1", "2"]


def test_range_lock_refusals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bundle.fixture import Timeline, acquire_gpu_lock

    with pytest.raises(BundleError, match="'range'"):
        boards.placement_env(None, str(tmp_path / "l"), 0, lock_scope="range")
    with pytest.raises(BundleError, match="scope"):
        boards.placement_env(None, str(tmp_path / "l"), lock_scope="shared")
    monkeypatch.setenv("REV88_GPU_LOCK", str(tmp_path / "l"))
    monkeypatch.setenv("REV88_GPU_LOCK_SCOPE", "range")
    with pytest.raises(BundleError, match="whole-process lock"):
        acquire_gpu_lock(Timeline(), "measure")  # an energy or measure job never takes the range scope
    monkeypatch.setenv("REV88_GPU_LOCK_SCOPE", "bogus")
    with pytest.raises(BundleError, match="not one of"):
        acquire_gpu_lock(Timeline(), "profile")


def test_tickets_keep_the_design_order(tmp_path: Path) -> None:
    """Three real processes, the first one slow to arrive: they still take the lock in ticket order."""
    import subprocess
    import sys

    from bundle.phases.fixture_runner import run_overlapped

    lock = tmp_path / "gpu.lock"
    log = tmp_path / "order.txt"
    code = ("import os, sys, time; time.sleep(float(sys.argv[1])); from bundle.fixture import Timeline, acquire_gpu_lock; "
            "info = acquire_gpu_lock(Timeline()); open(sys.argv[2], 'a').write(os.environ['REV88_GPU_TICKET'] + '\\n'); "
            "time.sleep(0.2)")

    def job(k: int, delay: float):
        def run() -> int:
            env = {**__import__("os").environ, **boards.placement_env(None, str(lock), k)}
            return subprocess.run([sys.executable, "-c", code, str(delay), str(log)], env=env, check=True).returncode
        return run

    assert run_overlapped([job(0, 1.0), job(1, 0.0), job(2, 0.0)], 3, Path(str(lock) + ".turn")) == [0, 0, 0]
    assert log.read_text().split() == ["0", "1", "2"]


def test_first_failure_stops_the_rest(tmp_path: Path) -> None:
    import time

    from bundle.phases.fixture_runner import run_overlapped

    ran: list[int] = []
    turn = tmp_path / "gpu.lock.turn"

    def failed_seen() -> bool:
        return turn.is_file() and turn.read_text().strip() == "-1"

    def job(k: int):
        def run() -> int:
            ran.append(k)
            if k == 0:
                raise BundleError("job 0 failed")
            # the other jobs end only once the host has seen the failure, so no thread schedule lets all
            # ten run; the deadline only stops a hang (the host never marking the failure is the fault)
            deadline = time.monotonic() + SAFETY_S
            while not failed_seen():
                if time.monotonic() > deadline:
                    gave_up.append(k)
                    break
                time.sleep(0.01)
            return k
        return run

    gave_up: list[int] = []
    with pytest.raises(BundleError, match="job 0 failed"):
        run_overlapped([job(k) for k in range(10)], 2, turn)
    assert not gave_up, "the host never set the turn to -1 after job 0 failed"
    assert len(ran) < 10 and turn.read_text().strip() == "-1"


def test_board_lists_and_digits_are_checked() -> None:
    with pytest.raises(BundleError, match="distinct board UUIDs"):
        boards.parse_board_list("junk,,junk")
    with pytest.raises(BundleError, match="named twice"):
        boards.parse_board_list("GPU-a1,GPU-a1")
    with pytest.raises(BundleError, match="neither an NVML index"):
        boards.select("²", HOST)


def test_jobs_need_fresh_processes(tmp_path: Path) -> None:
    from bundle.phases.qualify import run_qualification

    with pytest.raises(BundleError, match="needs fresh processes"):
        run_qualification(tmp_path / "run", device="cpu", draws=[0], jobs=2)


def test_a_failing_draw_keeps_the_finished_ones_staged(tmp_path: Path) -> None:
    from bundle.phases.fixture_runner import FreshProcessRunner
    from bundle.phases.qualify import run_qualification

    real = FreshProcessRunner(SubprocessEngine(), tmp_path / "work", device="cpu")

    def runner(i, inputs):
        if i == 1:
            raise BundleError("draw 1 failed on purpose")
        return real(i, inputs)

    with pytest.raises(BundleError, match="draw 1 failed"):
        run_qualification(tmp_path / "run", device="cpu", draws=[0, 1], runner=runner, jobs=2)
    staged = tmp_path / "run" / ".staging" / "qualify"
    assert (staged / "draw-00.json.gz").is_file() and not (staged / "draw-01.json.gz").exists()
