"""deploy/docker-compose.yml on a real Docker engine (issue 31 item 4): the image built (its
hot modules compiled), the cluster started until every service is healthy, 1,000 messages
sent and received with the SDK from this host through the published ports, broker-a's master
container stopped while a consumer reads on from its slave, and `down -v` leaving no
container, volume or network of the project.

Skipped, saying why, when no engine answers on the default socket (this test never installs
or starts one: deploy/README.md says how), without Compose (v2's `docker compose`, else
1.29's `docker-compose`), without a base image (AIOROCKETMQ_BASE, else
aiorocketmq-base:bookworm from deploy/base-image.sh, else python:3.11-slim, whichever the
engine has), or when a port the project publishes is taken on this host (`make run`?).
The image build is Docker's: cached between runs, minutes when the sources changed (mypyc).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from aiorocketmq.client import (
    ConsumeFromWhere,
    ConsumeStatus,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from aiorocketmq.client.consumer.types import PushOptions
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from tests.deploy.compose import COMPOSE, load
from tests.util import wait_until

PROJECT = "aiorocketmq-test"  # not the users' aiorocketmq (deploy/.env)
SERVICES = ("namesrv", "broker-a", "broker-a-s", "broker-b")
NAMESRV = "127.0.0.1:9876"
MASTER_A, SLAVE_A, MASTER_B = "127.0.0.1:10911", "127.0.0.1:10915", "127.0.0.1:10921"
TOPIC, QUEUES, COUNT = "DockerTopic", 4, 1000
BUILD_TIMEOUT = 3600.0  # a cold build compiles with mypyc: minutes on a busy machine
HEALTHY_TIMEOUT = 300.0
BASES = ("aiorocketmq-base:bookworm", "python:3.11-slim")
# the consumer pulls PULL_BATCH messages at a time and holds at most about PULL_THRESHOLD +
# PULL_BATCH per queue: what it can have pulled from broker-a's master before it stopped
PULL_BATCH, PULL_THRESHOLD = 8, 16
FAST: PushOptions = {
    "rebalance_interval": 1000,
    "persist_consumer_offset_interval": 500,
    "poll_name_server_interval": 500,
    "heartbeat_broker_interval": 1000,
    "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    "pull_batch_size": PULL_BATCH,
    "pull_threshold_for_queue": PULL_THRESHOLD,
}


def run(
    argv: list[str], timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )


def engine_or_skip() -> None:
    if shutil.which("docker") is None:
        pytest.skip("no docker client on PATH")
    server = run(["docker", "version", "--format", "{{.Server.Version}}"], 60)
    if server.returncode != 0:
        why = (server.stderr.strip().splitlines() or ["no answer"])[-1]
        pytest.skip(f"no Docker engine answers on the default socket: {why}")


def compose_or_skip() -> list[str]:
    """`make compose`'s choice: Compose v2 if the client has it, else Compose 1.29."""
    if run(["docker", "compose", "version"], 60).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose") is not None:
        return ["docker-compose"]
    pytest.skip("no Compose: neither `docker compose` (v2) nor `docker-compose` (1.29)")


def base_or_skip() -> str:
    wanted = [os.environ["AIOROCKETMQ_BASE"]] if os.environ.get("AIOROCKETMQ_BASE") else BASES
    for base in wanted:
        if run(["docker", "image", "inspect", base], 60).returncode == 0:
            return base
    pytest.skip(f"no base image in the engine ({', '.join(wanted)}): sh deploy/base-image.sh")


def published_ports() -> list[int]:
    ports: list[int] = []
    for spec in load()["services"]["namesrv"]["ports"]:
        first, _, last = spec.split(":")[-1].partition("-")
        ports += range(int(first), int(last or first) + 1)
    return ports


def ports_or_skip() -> None:
    for port in published_ports():
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                pytest.skip(f"port {port}, which the project publishes, is taken on this host")


@dataclass
class Compose:
    argv: list[str]
    base: str
    timings: dict[str, float] = field(default_factory=dict)

    def __call__(self, *args: str, timeout: float = 300.0) -> str:
        cmd = [*self.argv, "-p", PROJECT, "-f", str(COMPOSE), *args]
        done = run(cmd, timeout, {"AIOROCKETMQ_BASE": self.base})
        assert done.returncode == 0, f"{' '.join(cmd)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def container(self, service: str) -> str:
        return self("ps", "-q", service).strip()

    def health(self, service: str) -> str:
        fmt = "{{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}"
        return run(
            ["docker", "inspect", "--format", fmt, self.container(service)], 60
        ).stdout.strip()

    def last_check(self, service: str) -> str:
        """What the service's last health check printed."""
        fmt = "{{json .State.Health.Log}}"
        done = run(["docker", "inspect", "--format", fmt, self.container(service)], 60)
        checks = json.loads(done.stdout)
        return str(checks[-1]["Output"]).strip() if checks else ""

    def logs(self, service: str) -> str:
        done = run(["docker", "logs", self.container(service)], 60)
        return done.stdout + done.stderr

    def leftovers(self) -> dict[str, list[str]]:
        label = f"label=com.docker.compose.project={PROJECT}"
        found = {}
        for kind, ls in (("containers", ["ps", "-a"]), ("volumes", ["volume", "ls"]),
                         ("networks", ["network", "ls"])):  # fmt: skip
            listed = run(["docker", *ls, "-q", "--filter", label], 60)
            assert listed.returncode == 0, listed.stderr
            found[kind] = listed.stdout.split()
        return found


@pytest.fixture
def compose() -> Iterator[Compose]:
    engine_or_skip()
    project = Compose(compose_or_skip(), base_or_skip())
    ports_or_skip()
    try:
        yield project
    finally:
        project("down", "-v", "--remove-orphans", "--timeout", "30", timeout=300)
        print("== timings (s): " + ", ".join(f"{k} {v:.1f}" for k, v in project.timings.items()))


def timed(compose: Compose, what: str, since: float) -> float:
    compose.timings[what] = time.monotonic() - since
    return time.monotonic()


@pytest.mark.slow
@pytest.mark.timeout(BUILD_TIMEOUT + 900)
def test_the_cluster_in_containers_carries_messages_and_reads_on_from_the_slave(
    compose: Compose,
) -> None:
    """Issue 31 items 3 and 4: build, up until the four services are healthy (each image says
    at start it runs compiled modules), 1,000 messages through both masters and back, broker-a's
    master container stopped mid-consumption: its queues are read on from broker-a-s (more of
    them than the consumer can have pulled from the master before), every message received;
    `down -v` leaves no container, volume or network of the project."""
    start = time.monotonic()
    compose("build", timeout=BUILD_TIMEOUT)
    now = timed(compose, "build", start)
    compose("up", "-d", timeout=HEALTHY_TIMEOUT)
    deadline = time.monotonic() + HEALTHY_TIMEOUT
    while (states := {s: compose.health(s) for s in SERVICES}) != dict.fromkeys(
        SERVICES, "healthy"
    ):
        assert time.monotonic() < deadline, (states, {s: compose.logs(s)[-3000:] for s in SERVICES})
        time.sleep(1)
    now = timed(compose, "up until healthy", now)
    for service in SERVICES:
        assert "aiorocketmq: hot modules compiled (mypyc)" in compose.logs(service), service
        print(f"== {service}: {compose.last_check(service)}")

    sent, got, from_a_after_stop = asyncio.run(traffic(compose))
    timed(compose, "send, replicate, receive, failover", now)
    print(f"== sent {len(sent)}: broker-a {sum(b == 'broker-a' for b in sent.values())}, "
          f"broker-b {sum(b == 'broker-b' for b in sent.values())}; received {len(got)} "
          f"distinct; broker-a's after its master stopped: {from_a_after_stop}")  # fmt: skip
    assert set(got) == set(sent) and len(sent) == COUNT
    assert from_a_after_stop > QUEUES * (PULL_THRESHOLD + PULL_BATCH), from_a_after_stop

    now = time.monotonic()
    compose("down", "-v", "--timeout", "30")
    timed(compose, "down -v", now)
    assert compose.leftovers() == {"containers": [], "volumes": [], "networks": []}


async def traffic(compose: Compose) -> tuple[dict[bytes, str], list[bytes], int]:
    """Send COUNT messages, wait until broker-a-s holds broker-a's, consume with broker-a's
    master stopped once the first batch came: the bodies sent (each with its broker), the
    bodies received, how many of broker-a's were received after its master stopped."""
    async with RemotingClient() as admin:
        for broker in (MASTER_A, MASTER_B):
            resp = await admin.invoke(broker, api.create_topic(TOPIC, QUEUES))
            assert resp.code == 0, (broker, resp.remark)
    sent: dict[bytes, str] = {}
    async with Producer("docker_producers", namesrv_addr=NAMESRV) as producer:
        for i in range(COUNT):
            result = await producer.send(Message(TOPIC, b"m%04d" % i))
            sent[b"m%04d" % i] = result.queue.broker_name
    assert set(sent.values()) == {"broker-a", "broker-b"}
    await replicated()

    got: list[bytes] = []
    first_batch, master_gone = asyncio.Event(), asyncio.Event()
    after_stop: list[bytes] = []

    async def listener(msgs: list[MessageExt], _ctx: object) -> ConsumeStatus:
        first_batch.set()
        await master_gone.wait()  # until broker-a's master is stopped, nothing is consumed
        got.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer("docker_consumers", namesrv_addr=NAMESRV, **FAST)
    consumer.subscribe(TOPIC, "*")
    consumer.register_message_listener(listener)
    async with consumer:
        await asyncio.wait_for(first_batch.wait(), 60)
        stop = await asyncio.create_subprocess_exec(
            "docker", "stop", "--time", "30", compose.container("broker-a"),
            stdout=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        assert await asyncio.wait_for(stop.wait(), 120) == 0
        master_gone.set()
        await wait_until(lambda: set(got) >= set(sent), 180)
        after_stop = [b for b in set(got) if sent[b] == "broker-a"]
    return sent, got, len(after_stop)


async def replicated() -> None:
    """Until broker-a-s's queues of TOPIC end where broker-a's do and it knows TOPIC (a slave
    copies its master's topics every slaveSyncInterval, 10 s: it serves no pull before)."""
    async with RemotingClient() as cli:

        async def knows_topic() -> bool:
            resp = await cli.invoke(SLAVE_A, api.request(C.GET_ALL_TOPIC_CONFIG))
            return resp.code == 0 and f'"{TOPIC}"'.encode() in resp.body

        async def ends(addr: str) -> list[int]:
            out = []
            for q in range(QUEUES):
                resp = await cli.invoke(addr, api.queue_request(C.GET_MAX_OFFSET, TOPIC, q))
                out.append(api.parse_offset(resp, addr) if resp.code == 0 else -1)
            return out

        async with asyncio.timeout(120):
            while True:
                master = await ends(MASTER_A)
                if min(master) > 0 and master == await ends(SLAVE_A) and await knows_topic():
                    return
                await asyncio.sleep(0.2)
