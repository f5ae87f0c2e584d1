"""Automatic failover in containers (issue 35 item 4): deploy/docker-compose.failover.yml over the
compose file -- etcd from etcd's own image and broker-a's three controller-mode replicas, the
file's static brokers left out (profile "static"). There is no Docker engine here: the merged
file is validated by Compose 1.29 (`config`), and its services run as local processes
(tests/deploy/compose.py; etcd as the host's binary), each healthy by its own healthcheck; a
message is acknowledged, the master killed, another replica elected acknowledges."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from aiorocketmq.client import Message
from aiorocketmq.client.sync import Producer
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from tests.deploy.compose import COMPOSE, Project, load, start_order
from tests.harness import ROOT

OVERLAY = ROOT / "deploy" / "docker-compose.failover.yml"
REPLICAS = ["broker-a-1", "broker-a-2", "broker-a-3"]
ACTIVE = ["namesrv", "etcd", *REPLICAS]
STATIC = ["broker-a", "broker-a-s", "broker-b"]
HEALTH = ["CMD", "python3", "-m", "aiorocketmq.deploy.health"]


def conf(service: str) -> dict[str, str]:
    lines = (COMPOSE.parent / "conf" / "failover" / f"{service}.conf").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_failover_overlay_shape() -> None:
    """etcd from a pinned release of etcd's own image, its data in a named volume, its client
    port published for mqadmin; three replicas in controller mode (brokerId 1..3, distinct
    ports, each published with its VIP and metrics port) pointed at that etcd, started once
    etcd and the name server are healthy, each checked by deploy/health.py; the static
    brokers only in a profile; the image has the failover extra."""
    config = load(None, OVERLAY)
    services = config["services"]
    assert sorted(n for n, s in services.items() if not s.get("profiles")) == sorted(ACTIVE)
    assert all(services[n]["profiles"] == ["static"] for n in STATIC)
    etcd = services["etcd"]
    image, _, tag = etcd["image"].partition(":")
    assert image == "gcr.io/etcd-development/etcd" and tag.startswith("v3.") and tag != "latest"
    assert etcd["network_mode"] == "service:namesrv"
    assert any(v.endswith(":/var/lib/etcd") and v.split(":")[0] in config["volumes"]
               for v in etcd["volumes"])  # fmt: skip
    assert "--data-dir" in etcd["command"] and "/var/lib/etcd" in etcd["command"]
    assert etcd["healthcheck"]["test"][:2] == ["CMD", "/usr/local/bin/etcdctl"]
    published = {int(p.split(":")[-1]) for p in services["namesrv"]["ports"]}
    assert 2379 in published
    ids, ports = set(), set()
    for name in REPLICAS:
        svc, keys = services[name], conf(name)
        assert svc["command"][:3] == ["mqbroker", "-c", f"/etc/aiorocketmq/{name}.conf"]
        assert svc["healthcheck"]["test"] == [*HEALTH, "broker", f"/etc/aiorocketmq/{name}.conf"]
        assert svc["depends_on"]["etcd"]["condition"] == "service_healthy"
        assert svc["depends_on"]["namesrv"]["condition"] == "service_healthy"
        assert keys["enableControllerMode"] == "true"
        assert keys["controllerAddr"] == "127.0.0.1:2379"
        assert keys["brokerName"] == "broker-a" and keys["brokerRole"] == "SYNC_MASTER"
        port = int(keys["listenPort"])
        assert {port, port - 2, port + 1000} <= published, (name, port)
        ids.add(int(keys["brokerId"]))
        ports.add(port)
        data = [v for v in svc["volumes"] if v.endswith(":/var/lib/aiorocketmq")]
        assert len(data) == 1 and data[0].split(":")[0] in config["volumes"], svc["volumes"]
    assert ids == {1, 2, 3} and len(ports) == 3
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    assert '"aiorocketmq[server,failover] @ file://' in dockerfile


def test_the_replicas_meet_on_no_port() -> None:
    """The replicas' conf files as ``-p`` shows them (deploy/conf/failover: the folder of
    their own, as their ports are broker-a's and its slave's): each its own metrics port,
    listenPort + 1000, and no port of one is another's (a broker holds listenPort - 2 to + 1)."""
    held: dict[int, str] = {}
    for name in REPLICAS:
        path = COMPOSE.parent / "conf" / "failover" / f"{name}.conf"
        argv = [sys.executable, "-m", "aiorocketmq.broker", "-c", str(path), "-p"]
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=True,
                              timeout=120)  # fmt: skip
        keys = dict(line.split("=", 1) for line in done.stdout.splitlines())
        listen, metrics = int(keys["listenPort"]), int(keys["metricsPort"])
        assert metrics == listen + 1000, (name, metrics)
        for port in [*range(listen - 2, listen + 2), metrics]:
            assert port not in held, (name, port, held.get(port))
            held[port] = name
        assert keys["enableControllerMode"] == "true" and keys["brokerId"] == name[-1]


def test_compose_1_29_reads_the_overlay() -> None:
    """Debian's Compose 1.29 (`docker-compose`) validates the merged files (`config` needs no
    engine): every service, the static brokers in their profile, the ports concatenated."""
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.skip(
            "docker-compose (Compose 1.29, apt-get install docker-compose) is not installed"
        )
    argv = [binary, "-f", str(COMPOSE), "-f", str(OVERLAY), "config"]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    merged = yaml.safe_load(run.stdout)["services"]
    assert merged.keys() == {*ACTIVE, *STATIC}
    assert all(merged[n]["profiles"] == ["static"] for n in STATIC)
    ports = {p if isinstance(p, str) else p["published"] for p in merged["namesrv"]["ports"]}
    assert any("2379:2379" in str(p) for p in ports) and any("9876" in str(p) for p in ports)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    if shutil.which("etcd") is None or shutil.which("etcdctl") is None:
        pytest.skip("etcd / etcdctl not installed (make setup installs Debian's etcd-server)")
    started = Project(tmp_path, (OVERLAY,))
    try:
        yield started
    finally:
        codes = started.stop()
        assert all(code in (0, -9) for code in codes.values()), codes  # -9: the killed master


def poll(get: Callable[[], str | None], timeout: float, what: str) -> str:
    """``get()`` until it gives something (a busy machine is given ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while (got := get()) is None:
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.2)
    return got


def send(namesrv: str, body: bytes) -> str | None:
    """One send; the address of the broker that stored it when SEND_OK, else None."""
    try:
        with Producer("compose_failover", namesrv) as producer:
            result = producer.send(Message("ComposeFailover", body))
    except Exception:  # noqa: BLE001 -- no master yet, or a master without its replicas
        return None
    if result.status.name != "SEND_OK":
        return None
    return parse_offset_msg_id(result.offset_msg_id)[0]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_failover_compose_cluster_fails_over(project: Project) -> None:
    """Every service passes its health check (etcd's etcdctl; a replica's as master or as a
    slave); a send is acknowledged by the master; its process killed (SIGKILL by PID), its
    health check fails and another replica acknowledges."""
    assert start_order(project.services) == ["namesrv", "etcd", *REPLICAS]
    for service in start_order(project.services):
        project.start_any(service)
        assert project.wait_healthy(service), service
    namesrv = f"127.0.0.1:{project.ports[9876]}"
    master = poll(lambda: send(namesrv, b"before"), 60, "a send acknowledged")
    addrs = {name: f"127.0.0.1:{project.procs[name].listening_port()}" for name in REPLICAS}
    (old,) = [name for name, addr in addrs.items() if addr == master]
    checked = project.check_health(old)
    assert checked.returncode == 0 and "is the master" in checked.stdout, checked.stdout
    project.procs[old].proc.kill()
    project.procs[old].proc.wait()
    new = poll(lambda: send(namesrv, b"after"), 60, "a send acknowledged by a new master")
    assert new != master and new in addrs.values(), (new, master)
    assert project.check_health(old).returncode == 1
    for name in REPLICAS:
        if name != old:
            assert project.wait_healthy(name), name
