"""The processes of a failover run, each in its own namespace (netns.py): the name server
(host ``ns``), one broker group ``broker-a`` (hosts ``a0``, ``a1``, and ``a2`` in controller
mode), etcd in controller mode (host ``ctl``), and the clients (host ``cl``). Every process
is started with ``ip netns exec`` (its PID is the server's own) and stopped, killed, frozen
or thawed by that PID. Inside its namespace each server takes fixed ports (9876, 10911 with
HA on 10912, etcd 2379/2380): the namespaces' port spaces are their own.

Modes: ``static`` is today's SYNC_MASTER (a0) + SLAVE (a1); ``controller`` is issue 35's
controller mode: three replicas and etcd, with 5.x's keys (``enableControllerMode``,
``controllerAddr``, ``allAckInSyncStateSet``). ``controller_missing()`` says why this tree
cannot run it yet (a skip): until the lead enables it (CONTROLLER_ENABLED) and the broker's
config knows those keys."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.failover.netns import Network
from tests.harness import ROOT, ServerProcess

GROUP = "broker-a"
NAMESRV_PORT, BROKER_PORT, ETCD_PORT = 9876, 10911, 2379
MODES = ("static", "controller")

# short periods, small files: the test never waits on RocketMQ's production intervals
BROKER_COMMON = {
    "brokerName": GROUP,
    "registerNameServerPeriod": "1000",
    "mappedFileSizeCommitLog": str(4 * 1024 * 1024),
    "mappedFileSizeConsumeQueue": str(20 * 1000),
    "syncFlushTimeout": "1000",  # SYNC_MASTER cut from its slave answers 12 after 1 s
    "haSendHeartbeatInterval": "1000",
    "slaveSyncInterval": "300",
}
STATIC = {
    "a0": {"brokerId": "0", "brokerRole": "SYNC_MASTER"},
    "a1": {"brokerId": "1", "brokerRole": "SLAVE"},
}
CONTROLLER_KEYS = ("enableControllerMode", "controllerAddr", "allAckInSyncStateSet")
CONTROLLER_IDS = {"a0": 1, "a1": 2, "a2": 3}  # controller mode: each replica's brokerId


def hosts(mode: str) -> list[str]:
    if mode == "static":
        return ["ns", "a0", "a1", "cl"]
    return ["ns", "ctl", "a0", "a1", "a2", "cl"]


# the lead flips this when controller mode lands (FAILOVER_CONTROLLER=1 tries it before)
CONTROLLER_ENABLED = True


def controller_missing() -> str | None:
    """Why controller mode cannot run in this tree (None: it can): it must be enabled
    (CONTROLLER_ENABLED, or FAILOVER_CONTROLLER=1), the broker's config must know 5.x's
    controller keys, and etcd must be installed."""
    from aiorocketmq.broker.config import BrokerConfig
    from aiorocketmq.remoting.config import config_keys

    if not (CONTROLLER_ENABLED or os.environ.get("FAILOVER_CONTROLLER") == "1"):
        return (
            "controller mode is not enabled yet (tests/failover/topology.py CONTROLLER_ENABLED;"
            " FAILOVER_CONTROLLER=1 tries it)"
        )

    known = config_keys(BrokerConfig)
    missing = [k for k in CONTROLLER_KEYS if k not in known]
    if missing:
        return f"controller mode is not in this tree yet (the broker has no {', '.join(missing)})"
    if shutil.which("etcd") is None:
        return "controller mode needs etcd (apt-get install etcd-server)"
    return None


class External:
    """A non-Python server (etcd) in a namespace, its output in a file; stopped by PID."""

    def __init__(self, argv: Sequence[str], log: Path) -> None:
        self.log = log
        self._out = log.open("ab")
        self.proc = subprocess.Popen(list(argv), stdout=self._out, stderr=subprocess.STDOUT)

    def stop(self, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()
        code = self.proc.returncode
        # etcd's clean stop on SIGTERM runs its handlers, then re-raises the signal with the
        # default action (osutil.HandleInterrupts): -15 is its exit 0
        return 0 if code == -signal.SIGTERM else code

    def dump(self) -> str:
        return self.log.read_text(errors="replace")


Proc = ServerProcess | External


@dataclass
class Topology:
    net: Network
    root: Path
    mode: str = "static"
    master_role: str = "SYNC_MASTER"  # static mode: a0's brokerRole (ASYNC_MASTER to compare)
    # the group's master as the clients last saw it: the store host of the latest
    # acknowledgement (run.py keeps it current; static roles: a0 always). Controller mode:
    # the first master the controller installs (``elected``), before the clients create
    # the topic on it
    master: str = "a0"
    procs: dict[str, Proc] = field(default_factory=dict)
    paused: set[str] = field(default_factory=set)
    exits: list[tuple[str, int]] = field(default_factory=list)
    every: list[tuple[str, Proc]] = field(default_factory=list)  # each incarnation, for logs

    @property
    def namesrv(self) -> str:
        return f"{self.net.addr('ns')}:{NAMESRV_PORT}"

    def broker_addr(self, host: str) -> str:
        return f"{self.net.addr(host)}:{BROKER_PORT}"

    @property
    def brokers(self) -> list[str]:
        return [h for h in self.net.hosts if h.startswith("a")]

    def host_of(self, addr: str) -> str:
        """The broker host whose address is ``addr`` (a store host from an offsetMsgId)."""
        found = [h for h in self.brokers if self.broker_addr(h) == addr]
        if not found:
            raise ValueError(f"no broker of this run at {addr}")
        return found[0]

    def slaves(self) -> list[str]:
        return [h for h in self.brokers if h != self.master]

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self.start_host("ns")
        if self.mode == "controller":
            self.start_host("ctl")
        for host in self.brokers:
            self.start_host(host)
        if self.mode == "controller":
            self.master = self.elected()  # the clients create the topic on it

    def start_host(self, host: str) -> Proc:
        if host == "ns":
            proc: Proc = ServerProcess(
                ["-m", "aiorocketmq.namesrv", "--listen-port", str(NAMESRV_PORT),
                 *_sets({"kvConfigPath": str(self.root / "namesrv" / "kv.json"),
                         "bindAddress": "0.0.0.0"})],
                prefix=self.net.prefix(host),
            )  # fmt: skip
        elif host == "ctl":
            proc = self._etcd()
        else:
            proc = ServerProcess(
                ["-m", "aiorocketmq.broker", "-n", self.namesrv,
                 "--listen-port", str(BROKER_PORT), *_sets(self.broker_sets(host))],
                prefix=self.net.prefix(host),
            )  # fmt: skip
        self.procs[host] = proc
        self.every.append((host, proc))
        if isinstance(proc, ServerProcess):
            proc.listening_port()
        return proc

    def broker_sets(self, host: str) -> dict[str, str]:
        sets = {
            **BROKER_COMMON,
            "brokerIP1": self.net.addr(host),
            "storePathRootDir": str(self.root / host),
        }
        if self.mode == "static":
            role = {"brokerRole": self.master_role} if host == "a0" else {}
            return {**sets, **STATIC[host], **role}
        # issue 35's controller mode, 5.x's keys: the role is the controller's; each replica
        # has its own brokerId >= 1 (its identity there; brokerId 0 in routes as master)
        return {
            **sets,
            "brokerId": str(CONTROLLER_IDS[host]),
            "brokerRole": "SYNC_MASTER",  # the master's puts wait for the SyncStateSet
            "enableControllerMode": "true",
            "controllerAddr": f"{self.net.addr('ctl')}:{ETCD_PORT}",  # host:port;host:port
            "controllerHeartBeatTimeoutMills": "3000",
            "allAckInSyncStateSet": "true",
            "haMaxTimeSlaveNotCatchup": "5000",  # a cut slave leaves the set after 5 s
        }

    def elected(self, timeout: float = 120.0) -> str:
        """Controller mode: the host the controller made master first (its log says so)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for host in self.brokers:
                proc = self.procs[host]
                assert isinstance(proc, ServerProcess)
                if any(e.get("event") == "role_changed" and e.get("role") == "MASTER"
                       for e in proc.events):  # fmt: skip
                    return host
            time.sleep(0.1)
        raise TimeoutError(f"no master elected within {timeout} s")

    def _etcd(self) -> External:
        ip = self.net.addr("ctl")
        peer, client = f"http://{ip}:{ETCD_PORT + 1}", f"http://{ip}:{ETCD_PORT}"
        argv = [*self.net.prefix("ctl"), "etcd", "--name", "fv",
                "--data-dir", str(self.root / "etcd"),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"fv={peer}"]  # fmt: skip
        return External(argv, self.root / "etcd.log")

    def start_clients(self, history: Path, producers: int = 2, in_flight: int = 2) -> Proc:
        proc = ServerProcess(
            ["-m", "tests.failover.workload", "--namesrv", self.namesrv,
             "--masters", self.broker_addr(self.master), "--topic", TOPIC,
             "--out", str(history), "--producers", str(producers),
             "--in-flight", str(in_flight)],
            prefix=self.net.prefix("cl"),
        )  # fmt: skip
        self.procs["cl"] = proc
        self.every.append(("cl", proc))
        proc.wait_for("workload_ready", 120)
        return proc

    def read_back(self, out: Path, wait: float = 60.0, hosts: Sequence[str] = ()) -> str:
        """Runs readback.py in the clients' namespace (from the route's master, or from the
        brokers on ``hosts`` directly); its output."""
        argv = [*self.net.prefix("cl"), sys.executable, "-m", "tests.failover.readback",
                "--namesrv", self.namesrv, "--topic", TOPIC, "--groups", GROUP,
                "--out", str(out), "--wait", str(wait),
                "--addrs", ",".join(self.broker_addr(h) for h in hosts)]  # fmt: skip
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True,
                              timeout=wait + 120, env=os.environ.copy())  # fmt: skip
        if done.returncode:
            raise RuntimeError(f"readback exited {done.returncode}: {done.stdout}{done.stderr}")
        return done.stdout

    # ------------------------------------------------------------ faults on processes

    def pid(self, host: str) -> int:
        return self.procs[host].proc.pid

    def kill(self, host: str) -> None:
        """SIGKILL, and wait for it to be gone."""
        proc = self.procs[host]
        self.paused.discard(host)
        proc.proc.send_signal(signal.SIGKILL)
        proc.proc.wait(30)
        self.exits.append((host, proc.stop()))

    def pause(self, host: str) -> None:
        self.procs[host].proc.send_signal(signal.SIGSTOP)
        self.paused.add(host)

    def resume(self, host: str) -> None:
        self.procs[host].proc.send_signal(signal.SIGCONT)
        self.paused.discard(host)

    def wipe(self, host: str) -> None:
        """Deletes a stopped broker's messages (CommitLog, ConsumeQueues, index, checkpoint),
        keeping its config (topics, offsets): a disk lost, for the harness's self-test."""
        assert host not in self.procs or self.procs[host].proc.poll() is not None
        for part in ("commitlog", "consumequeue", "index", "checkpoint"):
            path = self.root / host / part
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()

    def restart(self, host: str) -> None:
        """Starts ``host`` again (same store, same address) after a kill."""
        self.start_host(host)

    def stop(self) -> list[tuple[str, int]]:
        """Every process stopped by its PID (a frozen one thawed first), clients first;
        each exit code, with those of the killed incarnations."""
        for host in list(self.paused):
            self.resume(host)
        order = ["cl", *reversed(self.brokers), "ctl", "ns"]
        for host in order:
            proc = self.procs.pop(host, None)
            if proc is not None:
                self.exits.append((host, proc.stop()))
        return self.exits

    def dump(self) -> str:
        return "\n".join(f"===== {h}\n{p.dump()}" for h, p in self.every)


TOPIC = "FailoverT"


def _sets(sets: dict[str, str]) -> list[str]:
    out = []
    for key, value in sets.items():
        out += ["--set", f"{key}={value}"]
    return out
