"""The running cluster: starts the servers in tiers, passes on their output, watches them and
stops them in reverse order. It is the launcher's only thread: with other threads alive, a
launcher killed by SIGKILL would hand its children from thread to dying thread, and each
hand-over sends PR_SET_PDEATHSIG again -- a second SIGTERM, which forces a server's exit."""

from __future__ import annotations

import select
import signal
import time
from pathlib import Path
from types import FrameType

from aiorocketmq.deploy import etcd
from aiorocketmq.deploy.acl import DemoAcl
from aiorocketmq.deploy.procs import NAMESRV, REPLICA, Server, Spec, conf_path, say

STOP_TIMEOUT = 10.0  # seconds each group of servers gets between SIGTERM and SIGKILL
FOLLOW_TIMEOUT = 30.0  # seconds a listening slave gets to connect to its master's HA port
METRICS_TIMEOUT = 5.0  # seconds a listening server gets to say where its metrics are
ELECTION_TIMEOUT = 60.0  # seconds controller-mode replicas get to elect a master
TIERS = ("name server", "masters", "slaves")


class Cluster:
    def __init__(self, data: Path, ephemeral: bool, keep_going: bool = False) -> None:
        self.data = data
        self.ephemeral = ephemeral
        self.keep_going = keep_going  # once ready, a server that dies leaves the others running
        self.servers: list[Server] = []
        self.specs: list[Spec] = []
        self.signal: int | None = None  # the stop signal, once one came
        self.failed = False  # a server failed to start or exited by itself
        self.dead: set[str] = set()  # with keep_going: servers that exited by themselves
        self.acl: DemoAcl | None = None  # --acl: the brokers' conf files get its keys
        # --failover: etcd's client and peer ports (free ones with --ephemeral: ``start``)
        self.etcd_ports = (etcd.CLIENT_PORT, etcd.PEER_PORT)
        self.master: tuple[str, int] | None = None  # --failover: the master told last, its epoch

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.signal = signum  # only a flag: the main loop acts on it

    def pump(self, timeout: float) -> None:
        """Pass on the servers' output for up to ``timeout`` seconds (less if a pipe closes)."""
        open_ = {s.fd: s for s in self.servers if s.fd is not None}
        if not open_:
            time.sleep(timeout)
            return
        for fd in select.select(list(open_), [], [], timeout)[0]:
            open_[fd].read()

    def argv(self, spec: Spec) -> list[str]:
        """``spec.argv`` with the installed conf files, its data under --data and console logs;
        with --ephemeral port 0 and the name server's real address. The metrics port is the
        server's default: listenPort + 1000, any free one with port 0."""
        if spec.role == etcd.ETCD:
            path = etcd.binary()
            assert path is not None  # the launcher checked
            return etcd.argv(path, self.data / etcd.ETCD_DIR, *self.etcd_ports)
        argv = [conf_path(arg) for arg in spec.argv]
        if self.acl is not None and spec.role != NAMESRV:  # its conf file plus the ACL keys
            at = argv.index("-c") + 1
            argv[at] = str(self.acl.broker_conf(Path(argv[at]), spec.name))
        argv += ["--log-format", "console"]
        if spec.role == NAMESRV:
            argv += ["--set", f"kvConfigPath={self.data}/namesrv/kvConfig.json"]
        else:
            argv += ["--set", f"storePathRootDir={self.data}/{spec.name}"]
        if self.ephemeral:
            argv += ["--listen-port", "0"]
            if spec.role != NAMESRV:
                argv += ["-n", f"127.0.0.1:{self.servers[0].port}"]
        if spec.role == REPLICA:  # etcd where it really listens
            argv += ["--set", f"controllerAddr=127.0.0.1:{self.etcd_ports[0]}"]
        return argv

    def tier_name(self, tier: int) -> str:
        if tier == 0 and any(s.role == etcd.ETCD for s in self.specs):
            return "name server and etcd"
        if tier == 1 and any(s.role == REPLICA for s in self.specs):
            return "controller-mode replicas"
        return TIERS[tier]

    def start(self, specs: list[Spec]) -> bool:
        """In tiers -- the name server, the masters, the slaves -- each ready before the next
        starts, so brokers register at once and slaves find their masters."""
        self.specs = specs
        if self.ephemeral and any(spec.role == etcd.ETCD for spec in specs):
            self.etcd_ports = (etcd.free_port(), etcd.free_port())
        width = max(8, *(len(spec.name) for spec in specs))
        for tier in sorted({spec.tier for spec in specs}):
            began = time.monotonic()
            say(f"starting the {self.tier_name(tier)}")
            wave = []
            for spec in specs:
                if spec.tier == tier:
                    port = self.etcd_ports[0] if spec.role == etcd.ETCD else None
                    wave.append(Server(spec, self.argv(spec), width, etcd_port=port))
                    say(f"{spec.name} started, pid {wave[-1].proc.pid}")
            self.servers += wave
            if not self.wait_ready(wave):
                return False
            say(f"{self.tier_name(tier)} ready in {time.monotonic() - began:.1f} s")
        if any(spec.role == REPLICA for spec in specs):
            return self.wait_elected()
        return True

    def wait_elected(self) -> bool:
        """Until a controller-mode replica says it is master (passed with a warning after
        ELECTION_TIMEOUT: they keep trying); False on a stop signal or a failure."""
        began = time.monotonic()
        while self.master_now() is None:
            if self.signal is not None:
                return False
            for server in self.servers:
                if server.exited():
                    say(f"{server.name} (pid {server.proc.pid}) exited while the replicas "
                        f"elected a master: it {server.how_it_ended()}")  # fmt: skip
                    self.failed = True
                    return False
            if time.monotonic() - began > ELECTION_TIMEOUT:
                say(f"no master elected in {ELECTION_TIMEOUT:g} s; the replicas keep trying")
                return True
            self.pump(0.2)
        self.tell_master()
        return True

    def master_now(self) -> Server | None:
        """The live replica that became master at the highest epoch, if one did."""
        live = [s for s in self.servers if s.master_epoch is not None and s.proc.poll() is None]
        return max(live, key=lambda s: s.master_epoch or 0, default=None)

    def tell_master(self) -> None:
        """Says which replica is master, once per change (the first time, and each failover)."""
        server = self.master_now()
        if server is None or server.master_epoch is None:
            return
        now = (server.name, server.master_epoch)
        if now != self.master:
            self.master = now
            say(f"{server.name} (pid {server.proc.pid}) is the master of {server.spec.group}, "
                f"epoch {server.master_epoch}")  # fmt: skip

    def wait_ready(self, wave: list[Server]) -> bool:
        """Until each server of ``wave`` is ready; False on a stop signal or a failure. A slave
        that does not follow its master within FOLLOW_TIMEOUT is passed with a warning (it
        keeps trying), and so is a server that does not tell its metrics port."""
        began = time.monotonic()
        while not all(server.ready for server in wave):
            if self.signal is not None:
                return False
            for server in wave:
                server.check()
                if server.exited():
                    say(f"{server.name} (pid {server.proc.pid}) failed to start: it "
                        f"{server.how_it_ended()}")  # fmt: skip
                    self.failed = True
                    return False
                if server.listening and server.port is None:
                    say(f"{server.name}: no port in its listening line")
                    self.failed = True
                    return False
                waited = time.monotonic() - began
                if not server.following and waited > FOLLOW_TIMEOUT:
                    say(f"{server.name} has not reached its master yet; it keeps trying")
                    server.following = True
                if server.listening and not server.metrics_known and waited > METRICS_TIMEOUT:
                    say(f"{server.name} did not log metrics_listening: no metrics endpoint shown")
                    server.metrics_known = True
            self.pump(0.2)
        return True

    def watch(self) -> None:
        """Until a stop signal, or until a server exits by itself (then says which and how).
        With keep_going a server that exits is named, with how it ended, and the others keep
        running (their output too) until a stop signal, or until none is left."""
        while self.signal is None:
            for server in self.servers:
                if server.name in self.dead or server.proc.poll() is None:
                    continue
                self.failed = True
                ended = f"{server.name} (pid {server.proc.pid}) {server.how_it_ended()}"
                if not self.keep_going:
                    say(f"{ended} unexpectedly; stopping the cluster")
                    return
                self.dead.add(server.name)
                alive = [s.name for s in self.servers if s.name not in self.dead]
                if not alive:
                    say(f"{ended} unexpectedly; no server is left: stopping")
                    return
                say(f"{ended} unexpectedly; --keep-going: {', '.join(alive)} keep running "
                    f"(Ctrl-C stops them)")  # fmt: skip
            self.pump(0.2)
            self.tell_master()

    def stop(self) -> bool:
        """Slaves first, then masters (they unregister from the name server), then the name
        server: SIGTERM, up to STOP_TIMEOUT, then SIGKILL. True when every server exited 0."""
        if self.signal is not None:
            say(f"{signal.Signals(self.signal).name}: stopping the cluster")
        for tier in sorted({s.spec.tier for s in self.servers}, reverse=True):
            group = [s for s in self.servers if s.spec.tier == tier]
            for server in group:
                if server.proc.poll() is None:
                    server.proc.send_signal(signal.SIGTERM)
            self.wait(group, STOP_TIMEOUT)
            for server in group:
                if server.proc.poll() is None:
                    say(f"{server.name} did not stop in {STOP_TIMEOUT:g} s: SIGKILL")
                    server.proc.kill()
            self.wait(group, 2.0)  # their last lines
        for server in self.servers:
            server.proc.wait()
        bad = ", ".join(f"{s.name} {s.how_it_ended()}" for s in self.servers if not s.stopped_clean)
        say(f"stopped; not every server exited 0 ({bad})" if bad else "stopped")
        return not bad

    def wait(self, group: list[Server], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not all(s.exited() for s in group) and time.monotonic() < deadline:
            self.pump(0.05)
