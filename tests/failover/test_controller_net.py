"""The controller's side of the harness, ready for controller mode: etcd started in its own
namespace by the topology (its PID is etcd's own), reached from the clients' namespace, cut
off by a partition and back after healing, and SIGKILLed by its PID (the nemesis'
``kill-with-controller``). Needs etcd (Debian's etcd-server) and etcdctl."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.failover import netns
from tests.failover.netns import network
from tests.failover.topology import ETCD_PORT, Topology

pytestmark = [
    pytest.mark.skipif(
        (why := netns.unavailable()) is not None, reason=why or "network namespaces available"
    ),
    pytest.mark.skipif(
        shutil.which("etcd") is None or shutil.which("etcdctl") is None,
        reason="etcd and etcdctl not installed (apt-get install etcd-server etcd-client)",
    ),
]


def healthy(net: netns.Network) -> bool:
    """``etcdctl endpoint health`` from the clients' namespace, 1 s per try."""
    argv = [*net.prefix("cl"), "etcdctl", f"--endpoints=http://{net.addr('ctl')}:{ETCD_PORT}",
            "--dial-timeout=1s", "--command-timeout=1s", "endpoint", "health"]  # fmt: skip
    return subprocess.run(argv, capture_output=True, timeout=30).returncode == 0


def until(predicate: Callable[[], bool], timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_etcd_in_its_namespace_is_cut_and_healed_and_killed(tmp_path: Path) -> None:
    with network(["ctl", "cl"]) as net:
        topo = Topology(net, tmp_path, "controller")
        try:
            etcd = topo.start_host("ctl")
            # ip netns exec: etcd itself (once `ip` has entered the namespace and exec'd)
            assert until(lambda: netns.pids(net.ns("ctl")) != [])
            assert netns.pids(net.ns("ctl")) == [etcd.proc.pid]
            assert until(lambda: healthy(net)), topo.dump()[-3000:]
            net.partition(["ctl"], ["cl"])
            assert not healthy(net)
            net.heal()
            assert until(lambda: healthy(net)), topo.dump()[-3000:]
            topo.kill("ctl")
            assert topo.exits[-1] == ("ctl", -9)
            assert not healthy(net)
        finally:
            topo.stop()
    assert not net.leftovers
