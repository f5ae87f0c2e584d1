"""Where the servers listen (issue 29 item 8, N9): a name server binds its configured address,
loopback unless ``bindAddress`` says otherwise; each /metrics endpoint binds its server's
configured address -- the name server's bindAddress, a broker's brokerIP1 (as 5.x's
metricsPromExporterHost) -- unless ``metricsHost`` says otherwise. Never 0.0.0.0 unless asked.
Real processes; the sockets are read from /proc."""

from __future__ import annotations

from pathlib import Path

from tests.cluster import running
from tests.harness import serving
from tests.scrape import listening_addrs, scrape


async def test_defaults_bind_no_wildcard(tmp_path: Path) -> None:
    """A name server started without bindAddress listens on 127.0.0.1 only, its /metrics
    too; a broker's /metrics listens on brokerIP1 (127.0.0.1 here), while its remoting ports
    keep 4.9.8's 0.0.0.0 (clients dial brokerIP1, which may be an address behind NAT)."""
    with running(tmp_path, ["broker-a"]) as cluster:
        ns = cluster.ns
        assert ns.wait_for("listening")["host"] == "127.0.0.1"
        ns_metrics = ns.metrics_port()
        assert listening_addrs(ns.proc.pid) == {
            ("127.0.0.1", cluster.namesrv_port),
            ("127.0.0.1", ns_metrics),
        }
        await scrape(ns_metrics)
        broker = cluster.brokers["broker-a"]
        assert broker.proc is not None
        metrics = broker.proc.metrics_port()
        addrs = listening_addrs(broker.proc.proc.pid)
        assert ("127.0.0.1", metrics) in addrs
        assert ("0.0.0.0", metrics) not in addrs
        assert ("0.0.0.0", broker.port) in addrs
        await scrape(metrics)


async def test_wildcard_when_asked(tmp_path: Path) -> None:
    """bindAddress=0.0.0.0 (as deploy/conf/compose/namesrv.conf sets it) binds every
    interface; metricsHost moves /metrics alone."""
    argv = ["-m", "aiorocketmq.namesrv", "--listen-port", "0",
            "--set", f"kvConfigPath={tmp_path / 'kv.json'}", "--set", "metricsPort=0"]  # fmt: skip
    with serving([*argv, "--set", "bindAddress=0.0.0.0"]) as ns:
        port, metrics = ns.listening_port(), ns.metrics_port()
        assert listening_addrs(ns.proc.pid) == {("0.0.0.0", port), ("0.0.0.0", metrics)}
    with serving([*argv, "--set", "metricsHost=0.0.0.0"]) as ns:
        port, metrics = ns.listening_port(), ns.metrics_port()
        assert listening_addrs(ns.proc.pid) == {("127.0.0.1", port), ("0.0.0.0", metrics)}
