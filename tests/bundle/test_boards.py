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
from bundle.errors import BundleError
from bundle.jobs import SubprocessEngine

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
    from bundle.phases.fixture_runner import FreshProcessRunner
    from bundle.phases.qualify import run_qualification

    fake = [boards.Board(None, "GPU-fake-a"), boards.Board(None, "GPU-fake-b")]
    runner = FreshProcessRunner(SubprocessEngine(), tmp_path / "work", device="cpu", boards=fake)
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
    # with two at once, some pair of draws overlapped in time
    assert any(r["concurrency"]["overlapping_draws"] for r in result["records"].values())


def test_overlaps_from_spans() -> None:
    from bundle.phases.qualify import overlaps

    assert overlaps({0: (0.0, 2.0), 1: (1.0, 3.0), 2: (3.0, 4.0)}) == {0: [1], 1: [0], 2: []}


def test_gpu_lock_serialises_processes(tmp_path: Path) -> None:
    """Two processes with one REV88_GPU_LOCK: the second acquires only after the first has exited."""
    import subprocess
    import sys
    import time

    lock = tmp_path / "gpu.lock"
    code = ("import sys, time; from bundle.fixture import Timeline, acquire_gpu_lock; t = Timeline(); "
            "info = acquire_gpu_lock(t); print(time.time(), info['waited_s']); sys.stdout.flush(); time.sleep(1.0)")
    env = {**__import__("os").environ, "REV88_GPU_LOCK": str(lock)}
    first = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    time.sleep(0.3)
    second = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    out1, out2 = first.communicate(timeout=30), second.communicate(timeout=30)
    t1, _ = map(float, out1[0].split())
    t2, waited2 = map(float, out2[0].split())
    assert t2 - t1 >= 0.9 and waited2 > 0.3


_RANGE_JOB = """
import json, sys, time
from bundle.fixture import Timeline, acquire_gpu_lock, exclusive_gpu_lock
t = Timeline()
info = acquire_gpu_lock(t, "profile")
shared_at = time.time()
time.sleep(float(sys.argv[1]))            # 'preparation' under the shared lock
asked_at = time.time()
exclusive_gpu_lock(info, t)
exclusive_at = time.time()
time.sleep(0.6)                           # 'warm-ups and range': alone on the board
print(json.dumps({"shared_at": shared_at, "asked_at": asked_at, "exclusive_at": exclusive_at, "end": time.time(), "info": info}))
"""


def _range_jobs(tmp_path: Path, preparations: list[float]) -> list[dict]:
    import json
    import os
    import subprocess
    import sys

    lock = tmp_path / "gpu.lock"
    env = {**os.environ, **boards.placement_env(None, str(lock), lock_scope="range")}
    procs = [subprocess.Popen([sys.executable, "-c", _RANGE_JOB, str(s)], env=env, stdout=subprocess.PIPE, text=True)
             for s in preparations]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    return [json.loads(o[0]) for o in outs]


def test_range_lock_overlaps_preparations_but_never_a_range(tmp_path: Path) -> None:
    """Three real processes with the profile's range-scoped lock: their shared parts overlap one another,
    and no part of another process under the lock (its shared preparation, its exclusive range) overlaps
    an exclusive part."""
    jobs = _range_jobs(tmp_path, [1.5, 1.5, 1.5])
    starts = sorted(j["shared_at"] for j in jobs)
    assert starts[-1] - starts[0] < 1.2  # all three prepared at once (each prepares for 1.5 s)
    for j in jobs:
        assert j["info"]["scope"] == "range" and j["info"]["ticket"] is None
        assert j["info"]["exclusive"]["acquired_at_s"] >= j["info"]["acquired_at_s"]
        for other in jobs:
            if other is j:
                continue
            for held in ((other["shared_at"], other["asked_at"]), (other["exclusive_at"], other["end"])):
                assert held[1] <= j["exclusive_at"] + 0.05 or held[0] >= j["end"] - 0.05, (held, j)


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
            deadline = time.monotonic() + 10.0  # the other jobs end only once the host has seen the failure,
            while not failed_seen() and time.monotonic() < deadline:  # so no thread schedule lets all ten run
                time.sleep(0.01)
            return k
        return run

    with pytest.raises(BundleError, match="job 0 failed"):
        run_overlapped([job(k) for k in range(10)], 2, turn)
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
