"""Issue 31 item 1: a broker's metrics port follows its listen port (listenPort + 1000) unless
``metricsPort`` says otherwise, and a port it cannot bind stops it from starting."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.harness import ServerProcess, serving
from tests.ports import METRICS_OFFSET, free_listen_port
from tests.scrape import matching, scrape

SMALL = ["--set", f"mappedFileSizeCommitLog={4 << 20}", "--set", "mappedFileSizeConsumeQueue=20000"]


def broker_argv(store: Path, name: str, port: int, *more: str) -> list[str]:
    return ["-m", "aiorocketmq.broker", "--listen-port", str(port), "--set", f"brokerName={name}",
            "--set", "brokerIP1=127.0.0.1", "--set", f"storePathRootDir={store / name}",
            *SMALL, *more]  # fmt: skip


async def test_two_brokers_on_one_host_each_serve_their_own_metrics(tmp_path: Path) -> None:
    """Issue 31, "Why" 1: with a fixed default (5557) the second broker on a host served no
    metrics, and its port answered with the first broker's. Each says its own address now."""
    argv = [broker_argv(tmp_path, name, 0) for name in ("broker-a", "broker-b")]
    with (
        serving(argv[0], default_metrics_port=True) as a,
        serving(argv[1], default_metrics_port=True) as b,
    ):
        ports = {}
        for name, proc in (("broker-a", a), ("broker-b", b)):
            ports[name] = proc.metrics_port()
            info = matching(await scrape(ports[name]), "rocketmq_broker_info")
            addrs = {dict(labels)["addr"] for labels in info}
            assert addrs == {f"127.0.0.1:{proc.listening_port()}"}, (name, info)
            assert dict(next(iter(info)))["broker"] == name
        assert ports["broker-a"] != ports["broker-b"]


async def test_the_metrics_port_is_the_listen_port_plus_1000(tmp_path: Path) -> None:
    port = free_listen_port(-2, 1, METRICS_OFFSET)
    with serving(broker_argv(tmp_path, "broker-a", port), default_metrics_port=True) as broker:
        assert broker.metrics_port() == port + METRICS_OFFSET
        info = matching(await scrape(port + METRICS_OFFSET), "rocketmq_broker_info")
        assert {dict(labels)["addr"] for labels in info} == {f"127.0.0.1:{port}"}


def refused(argv: list[str]) -> tuple[int, str]:
    """The exit code and the ``start_failed`` error of a broker that must not start."""
    proc = ServerProcess(argv, default_metrics_port=True)
    try:
        error = str(proc.wait_for("start_failed", timeout=30)["error"])
        code = proc.proc.wait(30)
    finally:
        proc.stop()
        print(proc.dump())
    assert not [e for e in proc.events if e.get("event") == "listening"]
    return code, error


def test_a_taken_default_metrics_port_is_an_error_naming_the_port_and_the_key(
    tmp_path: Path,
) -> None:
    port = free_listen_port(-2, 1, METRICS_OFFSET)
    with socket.create_server(("127.0.0.1", port + METRICS_OFFSET)):
        code, error = refused(broker_argv(tmp_path, "broker-a", port))
    assert code == 1
    assert f"metrics port {port + METRICS_OFFSET}" in error and "metricsPort" in error, error


def test_a_taken_explicit_metrics_port_is_an_error(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        busy = taken.getsockname()[1]
        code, error = refused(broker_argv(tmp_path, "broker-a", 0, "--set", f"metricsPort={busy}"))
    assert code == 1
    assert f"metrics port {busy}" in error and "metricsPort" in error, error
