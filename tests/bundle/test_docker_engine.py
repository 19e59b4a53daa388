"""DockerEngine against a real dockerd (marked ``docker``; .ci/run starts one and builds the image).

The jobs run in the verify image (it has a Python on PATH); GPU jobs on a machine without the
NVIDIA Container Toolkit exercise the real "no GPU runtime" path. After every test no
container with the engine's label may remain.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest

from bundle.docker_engine import IMAGE_ENV, IMAGE_ID_ENV, JOB_LABEL, DockerEngine
from bundle.jobs import TIMEOUT_EXIT_CODE, Engine, JobSpec
from protocol.errors import BundleError
from tests.conftest import interrupted_when

IMAGE = os.environ.get("REV88_VERIFY_IMAGE", "rev88/verify:local")


def test_container_options_follow_the_spec(tmp_path: Path) -> None:
    """No daemon needed: the create() arguments say what the contract says."""
    pytest.importorskip("docker")
    engine = DockerEngine("example/image:tag", client=object())
    assert isinstance(engine, Engine)
    spec = JobSpec(
        name="profile/workspace-16-8-task-r00",
        argv=("ncu", "--csv", "{python}", "-m", "bundle.fixture"),
        env={"CUBLAS_WORKSPACE_CONFIG": ":16:8"},
        workdir=tmp_path,
        gpu=True,
        cap_sys_admin=True,
    )
    options = engine.container_options(spec)
    assert options["entrypoint"] == ["ncu"]
    assert re.fullmatch(r"rev88-profile-workspace-16-8-task-r00-[0-9a-f]{12}", options["name"])
    assert engine.container_options(spec)["name"] != options["name"]  # fresh per container
    assert options["command"] == ["--csv", "python", "-m", "bundle.fixture"]
    assert options["environment"] == {IMAGE_ENV: "example/image:tag", "CUBLAS_WORKSPACE_CONFIG": ":16:8"}
    assert options["working_dir"] == str(tmp_path.resolve())
    assert options["volumes"] == {str(tmp_path.resolve()): {"bind": str(tmp_path.resolve()), "mode": "rw"}}
    assert options["labels"] == {JOB_LABEL: spec.name}
    assert options["network_mode"] == "none"  # jobs never need a network
    assert IMAGE_ID_ENV not in options["environment"]  # set once run() has resolved the image
    (request,) = options["device_requests"]
    assert request["Count"] == -1 and request["Capabilities"] == [["gpu"]]
    assert options["cap_add"] == ["SYS_ADMIN"] and options["user"] == "0:0"

    plain = engine.container_options(JobSpec(name="x", argv=("{python}", "-V"), workdir=tmp_path, gpu=False))
    assert "device_requests" not in plain and "cap_add" not in plain
    assert plain["user"] == f"{os.getuid()}:{os.getgid()}"
    with pytest.raises(BundleError, match="GPU count"):
        DockerEngine("example/image:tag", gpu_count=0)


def test_a_placed_job_gets_exactly_its_boards(tmp_path: Path) -> None:
    """--gpus: a job whose env carries CUDA_VISIBLE_DEVICES=<uuid> asks Docker for that board only."""
    pytest.importorskip("docker")
    from bundle.boards import Board, placement_env

    engine = DockerEngine("example/image:tag", client=object())
    board = Board(None, "GPU-fake-b")
    spec = JobSpec(name="qualify/draw-01", argv=("{python}", "-V"), env=placement_env(board), workdir=tmp_path)
    (request,) = engine.container_options(spec)["device_requests"]
    assert request["DeviceIDs"] == ["GPU-fake-b"] and request["Capabilities"] == [["gpu"]]
    assert request.get("Count") in (None, 0)
    assert engine.container_options(spec)["environment"]["REV88_BOARD_UUID"] == "GPU-fake-b"


@pytest.fixture(scope="module")
def client():
    docker = pytest.importorskip("docker")
    client = docker.from_env()
    try:
        client.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        message = f"image {IMAGE} is missing: build it with `make image-verify` (or set REV88_VERIFY_IMAGE)"
        if os.environ.get("REV88_REQUIRE_DOCKER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    yield client
    client.close()


def labelled(client) -> list[str]:
    """Every container carrying the engine's label, as 'name (job <label value>, <status>)'."""
    return [f"{c.name} (job {c.labels.get(JOB_LABEL)}, {c.status})"
            for c in client.containers.list(all=True, filters={"label": JOB_LABEL})]


@pytest.fixture
def engine(client):
    """The engine under test; before and after, no container with our label may exist."""
    assert labelled(client) == [], "containers an earlier step left behind"
    yield DockerEngine(IMAGE, client=client)
    assert labelled(client) == [], "containers this test left behind"


@pytest.mark.docker
def test_job_success_streams_lines_sets_env_and_writes_workdir(engine: DockerEngine, tmp_path: Path) -> None:
    script = (
        "import os, sys\n"
        "print('first'); print('second', flush=True)\n"
        "print('to stderr', file=sys.stderr)\n"
        "open('out.txt', 'w').write(os.environ['CUBLAS_WORKSPACE_CONFIG'] + ' ' + os.environ['REV88_IMAGE_REFERENCE']"
        " + ' ' + os.environ['REV88_IMAGE_ID'] + ' ' + ','.join(sorted(os.listdir('/sys/class/net'))))\n"
        "sys.stdout.write('no newline at the end')\n"
    )
    lines: list[str] = []
    result = engine.run(
        JobSpec(
            name="test/success",
            argv=("{python}", "-c", script),
            env={"CUBLAS_WORKSPACE_CONFIG": ":16:8"},
            workdir=tmp_path,
            gpu=False,
        ),
        on_line=lines.append,
    )
    assert result.exit_code == 0 and result.ok
    assert result.stdout == "first\nsecond\nno newline at the end"
    assert result.stderr == "to stderr\n"
    assert sorted(lines) == sorted(["first", "second", "to stderr", "no newline at the end"])
    assert lines.index("first") < lines.index("second")
    written = tmp_path / "out.txt"
    image_id = engine.client.images.get(IMAGE).id
    assert engine.image_id == image_id and image_id.startswith("sha256:")
    assert written.read_text() == f":16:8 {IMAGE} {image_id} lo"  # the image ID; no network but loopback
    assert written.stat().st_uid == os.getuid()  # jobs run as the host user


@pytest.mark.docker
def test_job_failure_propagates_exit_code(engine: DockerEngine, tmp_path: Path) -> None:
    result = engine.run(
        JobSpec(
            name="test/failure",
            argv=("{python}", "-c", "import sys; print('bad input', file=sys.stderr); sys.exit(3)"),
            workdir=tmp_path,
            gpu=False,
        )
    )
    assert result.exit_code == 3 and not result.ok
    assert result.last_error_line() == "bad input"


@pytest.mark.docker
def test_workspace_config_comes_only_from_the_spec(engine: DockerEngine, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    result = engine.run(
        JobSpec(
            name="test/env",
            argv=("{python}", "-c", "import os; print(os.environ.get('CUBLAS_WORKSPACE_CONFIG', 'unset'))"),
            workdir=tmp_path,
            gpu=False,
        )
    )
    assert result.stdout == "unset\n"


@pytest.mark.docker
def test_timeout_kills_and_removes_the_container(engine: DockerEngine, tmp_path: Path) -> None:
    result = engine.run(JobSpec(name="test/timeout", argv=(
        "{python}", "-c", "import time; time.sleep(60); print('finished')"), workdir=tmp_path,
                                gpu=False, timeout_s=1.5))
    assert result.exit_code == TIMEOUT_EXIT_CODE
    assert "timed out after 1.5 s" in result.stderr
    assert "finished" not in result.stdout  # killed, not waited for
    assert labelled(engine.client) == []  # and removed


@pytest.mark.docker
def test_no_gpu_runtime_is_one_clear_line(engine: DockerEngine, client, tmp_path: Path) -> None:
    if "nvidia" in (client.info().get("Runtimes") or {}):
        pytest.skip("this daemon has the NVIDIA runtime; the no-GPU path cannot be exercised here")
    with pytest.raises(BundleError) as caught:
        engine.run(JobSpec(name="test/gpu", argv=("{python}", "-c", "pass"), workdir=tmp_path, gpu=True))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("no GPU runtime available to Docker for job test/gpu")
    assert "NVIDIA Container Toolkit" in message and "--engine native" in message
    assert "could not select device driver" in message


@pytest.mark.docker
def test_missing_image_is_one_clear_line(client, tmp_path: Path) -> None:
    engine = DockerEngine("rev88/does-not-exist:never", client=client)
    with pytest.raises(BundleError, match=r"^image rev88/does-not-exist:never not found .*make image"):
        engine.run(JobSpec(name="test/missing", argv=("true",), workdir=tmp_path, gpu=False))
    assert labelled(client) == []


@pytest.mark.docker
def test_concurrent_removals_both_return_only_once_the_container_is_gone(engine: DockerEngine, client,
                                                                         tmp_path: Path) -> None:
    """Two removals of one running container at once: the daemon answers one of them "already in
    progress" (when they overlap); neither may return while the daemon still lists the container."""
    for attempt in range(3):
        container = client.containers.create(IMAGE, entrypoint=["sleep"], command=["60"], detach=True,
                                              labels={JOB_LABEL: f"test/remove-{attempt}"}, network_mode="none")
        container.start()
        seen: list[list[str]] = []
        barrier = threading.Barrier(2)

        def remove(container=container, seen=seen, barrier=barrier) -> None:
            barrier.wait()
            DockerEngine._remove(container)
            seen.append(labelled(client))

        threads = [threading.Thread(target=remove) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)  # only against a hang
        assert seen == [[], []]


@pytest.mark.docker
def test_interrupt_of_an_overlapped_phase_kills_and_removes_its_containers(engine: DockerEngine, client,
                                                                           tmp_path: Path) -> None:
    """Ctrl-C while two container jobs run on worker threads (three queued): both containers are
    killed and removed before the interrupt propagates, the third never starts."""
    from bundle.phases.fixture_runner import run_overlapped

    results: list = []
    jobs = [lambda k=k: results.append(engine.run(JobSpec(name=f"test/sleep-{k}", argv=(
        "{python}", "-c", "import time; time.sleep(120); print('finished')"), workdir=tmp_path, gpu=False))) for k in range(3)]
    interrupted_when(lambda: len(client.containers.list(filters={"label": JOB_LABEL})) >= 2,
                     lambda: run_overlapped(jobs, 2), timeout_s=600)
    assert not any("finished" in r.stdout for r in results)  # killed, not waited for
    assert labelled(client) == []  # killed and removed, not left running
