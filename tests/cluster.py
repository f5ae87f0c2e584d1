"""A real cluster for tests: one name server and N brokers as processes, on free ports below
the ephemeral range (tests/ports.py), the same ones again on a restart."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.harness import ServerProcess
from tests.ports import free_listen_port

# short periods so tests never wait on RocketMQ's production intervals
BROKER_DEFAULTS = {
    "brokerIP1": "127.0.0.1",
    "registerNameServerPeriod": "1000",
    "mappedFileSizeCommitLog": str(4 * 1024 * 1024),
    "mappedFileSizeConsumeQueue": str(20 * 1000),
    "metricsPort": "0",  # /metrics on any free port (listenPort + 1000 is the default)
}


@dataclass
class BrokerProc:
    name: str
    sets: dict[str, str]
    store: Path
    proc: ServerProcess | None = None
    port: int = 0
    open_files: int | None = None  # the process's RLIMIT_NOFILE, if limited

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class Cluster:
    root: Path
    namesrv_sets: dict[str, str] = field(default_factory=dict)
    namesrv: ServerProcess | None = None
    namesrv_port: int = 0
    brokers: dict[str, BrokerProc] = field(default_factory=dict)

    @property
    def ns(self) -> ServerProcess:
        """The name server process (started)."""
        assert self.namesrv is not None, "start_namesrv() first"
        return self.namesrv

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    def start_namesrv(self) -> None:
        sets = {
            "kvConfigPath": str(self.root / "namesrv" / "kv.json"),
            "metricsPort": "0",  # /metrics on any free port (listenPort + 1000 is the default)
            **self.namesrv_sets,
        }
        # the same port on restart: one outside the range connects take their local ports from
        self.namesrv_port = self.namesrv_port or free_listen_port()
        port = str(self.namesrv_port)
        self.namesrv = ServerProcess(
            ["-m", "aiorocketmq.namesrv", "--listen-port", port, *_sets(sets)]
        )
        self.namesrv_port = self.namesrv.listening_port()

    def add_broker(
        self,
        name: str,
        *,
        open_files: int | None = None,
        sets: Mapping[str, str] | None = None,
        **more: str,
    ) -> BrokerProc:
        """Start broker ``name`` with config ``sets`` and ``more`` (``--set``), limited to
        ``open_files`` descriptors if given."""
        config = {"brokerName": name, **BROKER_DEFAULTS, **(sets or {}), **more}
        broker = BrokerProc(name, config, self.root / name)
        broker.open_files = open_files
        self.brokers[name] = broker
        self.start_broker(name)
        return broker

    def start_broker(
        self, name: str, module: str = "aiorocketmq.broker", env: dict[str, str] | None = None
    ) -> BrokerProc:
        """(Re)start broker ``name``: ``python -m module`` (a test's wrapper of the broker's
        main, if not the broker's own) with ``env`` added to the environment."""
        broker = self.brokers[name]
        sets = {"storePathRootDir": str(broker.store), **broker.sets}
        # the same port on restart, with its HA (+1) and VIP (-2) neighbours: outside the range
        # connects take their local ports from, where any connection of another test could
        # have taken them while it was down (the restart then failed: "HA port ... is taken")
        broker.port = broker.port or free_listen_port(-2, 1)
        port = str(broker.port)
        broker.proc = ServerProcess(
            [
                "-m",
                module,
                "-n",
                self.namesrv_addr,
                "--listen-port",
                port,
                *_sets(sets),
            ],
            open_files=broker.open_files,
            env=env,
        )
        broker.port = broker.proc.listening_port()
        return broker

    def stop_broker(self, name: str) -> int:
        proc = self.brokers[name].proc
        assert proc is not None
        return proc.stop()

    def kill_broker(self, name: str) -> None:
        proc = self.brokers[name].proc
        assert proc is not None
        proc.proc.send_signal(signal.SIGKILL)
        proc.proc.wait(10)
        proc.stop()

    def stop(self) -> dict[str, int]:
        codes = {}
        for name, broker in self.brokers.items():
            if broker.proc is not None and broker.proc.proc.returncode is None:
                codes[name] = broker.proc.stop()
            elif broker.proc is not None:  # exited before: its output pipe still to close
                broker.proc.stop()
        if self.namesrv is not None:
            codes["namesrv"] = self.namesrv.stop()
        return codes

    def dump(self) -> str:
        procs: Iterable[tuple[str, ServerProcess | None]] = [
            ("namesrv", self.namesrv),
            *((n, b.proc) for n, b in self.brokers.items()),
        ]
        return "\n".join(f"===== {n}\n{p.dump()}" for n, p in procs if p is not None)


@contextlib.contextmanager
def running(
    root: Path, brokers: Iterable[str] = (), sets: Mapping[str, str] | None = None
) -> Iterator[Cluster]:
    """A name server and ``brokers`` (each with ``sets``) until the block ends; then every
    process is stopped by its PID, their logs printed, and each must have exited cleanly
    (0, or -9 for one a test killed)."""
    cluster = Cluster(root)
    cluster.start_namesrv()
    try:
        for name in brokers:
            cluster.add_broker(name, sets=sets)
        yield cluster
    finally:
        codes = cluster.stop()
        print(cluster.dump())
    assert all(code in (0, -9) for code in codes.values()), codes


def _sets(sets: dict[str, str]) -> list[str]:
    out = []
    for key, value in sets.items():
        out += ["--set", f"{key}={value}"]
    return out
