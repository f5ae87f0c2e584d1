"""The harness's network namespaces (netns.py): hosts reach each other over the run's own
bridge, a partition cuts exactly the pairs named (both ways) until healed, and closing
deletes every namespace, its links and rules with it, on failure too."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.failover import netns
from tests.failover.netns import network
from tests.harness import ServerProcess

pytestmark = pytest.mark.skipif(
    (why := netns.unavailable()) is not None, reason=why or "network namespaces available"
)

PORT = 9000
LISTEN = f"""
import json, socket
s = socket.socket()
s.bind(("0.0.0.0", {PORT}))
s.listen()
print(json.dumps({{"event": "listening", "port": {PORT}}}), flush=True)
while True:
    s.accept()[0].close()
"""
CONNECT = """
import socket, sys
s = socket.socket()
s.settimeout(1.5)
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
    print("connected")
except OSError as exc:
    print("cut", type(exc).__name__)
"""


def reaches(net: netns.Network, src: str, dst: str) -> bool:
    argv = [*net.prefix(src), sys.executable, "-c", CONNECT, net.addr(dst), str(PORT)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout
    assert out.startswith(("connected", "cut")), out
    return out.startswith("connected")


def test_a_partition_cuts_the_pairs_named_until_healed() -> None:
    with network(["x", "y", "z"]) as net:
        server = ServerProcess(["-c", LISTEN], prefix=net.prefix("y"))
        try:
            server.listening_port()
            assert reaches(net, "x", "y") and reaches(net, "z", "y")
            net.partition(["x"], ["y"])
            assert net.cuts == {frozenset(("x", "y"))}
            assert not reaches(net, "x", "y")  # dropped, both ways: no reset, a timeout
            assert reaches(net, "z", "y")  # the others still meet
            assert f"ip saddr {net.addr('y')} ip daddr {net.addr('x')} drop" in net.rules()
            net.heal()
            assert "drop" not in net.rules()
            assert reaches(net, "x", "y")
        finally:
            server.stop()


def test_closing_deletes_every_namespace_even_after_a_failure() -> None:
    made: list[str] = []
    with pytest.raises(RuntimeError, match="midway"), network(["x", "y"]) as net:
        made += [net.hub, net.ns("x"), net.ns("y")]
        assert set(made) <= set(netns.ours())
        net.partition(["x"], ["y"])
        raise RuntimeError("midway")
    assert not set(made) & set(netns.namespaces())


def test_closing_kills_a_process_left_inside() -> None:
    """A server the run failed to stop (here: never stopped) is SIGKILLed by its PID, not
    left running in a nameless namespace."""
    with network(["x"]) as net:
        server = ServerProcess(["-c", LISTEN], prefix=net.prefix("x"))
        server.listening_port()
    assert net.leftovers == [server.proc.pid]
    assert server.proc.wait(10) == -9
    server.stop()


def test_the_host_namespace_is_left_alone() -> None:
    """The run's links live in its namespaces only: the host's interfaces are the same
    before, during and after."""

    def links() -> str:
        return subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout

    before = {line.split(":")[1].strip() for line in links().splitlines()}
    with network(["x", "y"]):
        during = {line.split(":")[1].strip() for line in links().splitlines()}
    after = {line.split(":")[1].strip() for line in links().splitlines()}
    assert before == during == after
