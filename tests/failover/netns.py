"""Network namespaces a test run makes for itself: one per host (name server, each broker,
etcd, the clients), each with a veth into a bridge that lives in one more namespace (the
hub). Nothing touches the host's own namespace or interfaces: the hub is linked to nothing
else, so no packet can leave the run's namespaces. A partition of two hosts is a pair of
nftables drop rules on the hub's bridge (bridge family, forward hook), and healing flushes
them; closing deletes every namespace (their veths and rules go with them).

The addresses are 198.18.35.0/24, from RFC 2544's benchmarking range (never routed on the
internet, and no private network uses it): they exist only inside these namespaces. Needs
root (CAP_NET_ADMIN), ``ip`` (iproute2) and ``nft``; ``unavailable()`` says why not."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterable, Iterator, Sequence

SUBNET = "198.18.35"
_TABLE = ("bridge", "fv")
_CHAIN = "cut"
_NAME = re.compile(r"^fv(\d+)x\d+-")
_runs = itertools.count()


def _ip(*args: str) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def namespaces() -> list[str]:
    """The names ``ip netns list`` shows."""
    return [line.split()[0] for line in _ip("netns", "list").splitlines() if line.strip()]


def ours() -> list[str]:
    """The namespaces a run of this harness made (named ``fv<pid>x<n>-<host>``)."""
    return [name for name in namespaces() if _NAME.match(name)]


def pids(ns: str) -> list[int]:
    """The processes inside namespace ``ns`` (``ip netns pids``)."""
    try:
        return [int(p) for p in _ip("netns", "pids", ns).split()]
    except RuntimeError:
        return []


def kill_inside(ns: str) -> list[int]:
    """SIGKILLs every process still inside ``ns`` (a run's leftovers: only namespaces of
    this harness are ever passed), by PID; returns them."""
    found = pids(ns)
    for pid in found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return found


def sweep_stale() -> list[str]:
    """Deletes the namespaces of runs whose process is gone (a run killed before its
    cleanup), the processes left inside them first; returns their names."""
    gone = []
    for name in ours():
        match = _NAME.match(name)
        if match is not None and not _pid_alive(int(match.group(1))):
            kill_inside(name)
            with contextlib.suppress(RuntimeError):
                _ip("netns", "del", name)
                gone.append(name)
    return gone


def unavailable() -> str | None:
    """Why this machine cannot run the harness (for a skip), or None when it can: root,
    ``ip`` and ``nft`` present, and a namespace can be added and deleted."""
    if os.geteuid() != 0:
        return "network namespaces need root (CAP_NET_ADMIN); this run is not root"
    for tool in ("ip", "nft"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (iproute2 / nftables)"
    probe = f"fv{os.getpid()}x{next(_runs)}-probe"
    try:
        _ip("netns", "add", probe)
    except (RuntimeError, OSError) as exc:
        return f"cannot add a network namespace: {exc}"
    _ip("netns", "del", probe)
    return None


class Network:
    """Hosts in namespaces of their own on one bridge. ``addr(host)`` is a host's address,
    ``prefix(host)`` the command that runs a program inside its namespace; ``partition``
    cuts two sets of hosts apart, ``heal`` joins everything again."""

    def __init__(self, hosts: Sequence[str]) -> None:
        self.hosts = list(hosts)
        self.tag = f"fv{os.getpid()}x{next(_runs)}"
        self.hub = f"{self.tag}-hub"
        self._cuts: set[frozenset[str]] = set()
        self._made: list[str] = []
        self.leftovers: list[int] = []  # PIDs close() found still inside and killed

    def ns(self, host: str) -> str:
        return f"{self.tag}-{host}"

    def addr(self, host: str) -> str:
        return f"{SUBNET}.{2 + self.hosts.index(host)}"

    def prefix(self, host: str) -> list[str]:
        """``ip netns exec NS``: it execs the program in place, so its PID is the program's."""
        return ["ip", "netns", "exec", self.ns(host)]

    def up(self) -> None:
        """Makes the hub, its bridge and filter table, and each host's namespace and veth."""
        sweep_stale()
        self._add(self.hub)
        _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.hub, "link", "set", "br0", "up")
        self._nft("add", "table", *_TABLE)
        hook = "{ type filter hook forward priority 0; policy accept; }"
        self._nft("add", "chain", *_TABLE, _CHAIN, hook)
        for i, host in enumerate(self.hosts):
            ns, port = self.ns(host), f"p{i}"
            self._add(ns)
            _ip("-n", self.hub, "link", "add", port, "type", "veth", "peer", "name", "eth0",
                "netns", ns)  # fmt: skip
            _ip("-n", self.hub, "link", "set", port, "master", "br0")
            _ip("-n", self.hub, "link", "set", port, "up")
            _ip("-n", ns, "addr", "add", f"{self.addr(host)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")

    def _add(self, ns: str) -> None:
        _ip("netns", "add", ns)
        self._made.append(ns)

    def _nft(self, *args: str) -> str:
        return _ip("netns", "exec", self.hub, "nft", *args)

    def partition(self, side: Iterable[str], other: Iterable[str]) -> None:
        """No packet between any host of ``side`` and any of ``other``, either way (TCP
        connections hang as on a real cut cable: no reset)."""
        for a in side:
            for b in other:
                if a != b:
                    self._cuts.add(frozenset((a, b)))
        self._apply()

    def heal(self) -> None:
        self._cuts.clear()
        self._apply()

    @property
    def cuts(self) -> set[frozenset[str]]:
        return set(self._cuts)

    def _apply(self) -> None:
        self._nft("flush", "chain", *_TABLE, _CHAIN)
        for pair in sorted(self._cuts, key=sorted):
            a, b = (self.addr(h) for h in sorted(pair))
            for src, dst in ((a, b), (b, a)):
                self._nft("add", "rule", *_TABLE, _CHAIN, "ip", "saddr", src, "ip", "daddr", dst,
                          "drop")  # fmt: skip

    def rules(self) -> str:
        """The hub's ruleset as nft prints it."""
        return self._nft("list", "ruleset")

    def close(self) -> None:
        """Deletes every namespace made (the veths and rules go with them). The processes
        should be stopped first; any still inside is SIGKILLed (by its PID) and named in
        ``self.leftovers``, so that nothing outlives the run."""
        errors = []
        for ns in self._made:
            self.leftovers += kill_inside(ns)
        for ns in reversed(self._made):
            try:
                _ip("netns", "del", ns)
            except RuntimeError as exc:
                errors.append(str(exc))
        self._made.clear()
        if errors:
            raise RuntimeError("; ".join(errors))


@contextlib.contextmanager
def network(hosts: Sequence[str]) -> Iterator[Network]:
    """A Network that is up in the block and deleted after it, even on failure."""
    net = Network(hosts)
    try:
        net.up()
        yield net
    finally:
        net.close()
