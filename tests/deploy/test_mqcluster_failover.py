"""Issue 35 item 4: `make run ARGS="--failover"` -- etcd, a name server and broker-a's three
controller-mode replicas (deploy/etcd.py, procs.failover_plan). The launcher prints etcd's
endpoint, the mqadmin commands showing the controller's view, which replica is master and
how to kill it; a message is acknowledged; the master killed by its PID, another replica is
elected, the launcher names it and it acknowledges a send; mqadmin's getSyncStateSet shows
it; a stop signal stops every process, etcd included, by PID."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from aiorocketmq.client import Message, Producer, SendStatus
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from tests.deploy.launcher import LAUNCHER, Launcher, wait_all_gone
from tests.etcd import etcd_binary
from tests.harness import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, prctl")

NAMES = ["namesrv", "etcd", "broker-a-1", "broker-a-2", "broker-a-3"]
MASTER = re.compile(
    r"^mqcluster: (broker-a-\d) \(pid (\d+)\) is the master of broker-a, epoch (\d+)$", re.M
)
TOPIC = "FailoverRun"


def masters(run: Launcher) -> list[tuple[str, int, int]]:
    """Each "is the master" line so far: (name, pid, epoch)."""
    return [(name, int(pid), int(epoch)) for name, pid, epoch in MASTER.findall(run.text)]


async def draining(run: Launcher, done: Callable[[], bool], timeout: float, what: str) -> None:
    """Until ``done()``, reading the launcher's output meanwhile (a full pipe would block it)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not done():
        assert loop.time() < deadline, f"{what}: not within {timeout} s\n{run.text}"
        run.read(0)
        await asyncio.sleep(0.1)


async def acknowledged(run: Launcher, producer: Producer, body: bytes, timeout: float) -> str:
    """Sends ``body`` until it is acknowledged SEND_OK (a SYNC_MASTER without a SyncStateSet
    slave yet, or a group without a master, refuses); the address of the broker that stored
    it (the offset message id's store host)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            result = await producer.send(Message(TOPIC, body))
            if result.status is SendStatus.SEND_OK:
                return parse_offset_msg_id(result.offset_msg_id)[0]
        except Exception:  # noqa: BLE001 -- until a master acknowledges
            pass
        assert loop.time() < deadline, f"{body!r} not acknowledged in {timeout} s\n{run.text}"
        run.read(0)
        await asyncio.sleep(0.2)


@pytest.mark.timeout(300)
async def test_failover_cluster_elects_fails_over_and_stops(
    launch: Callable[..., Launcher], tmp_path: Path
) -> None:
    etcd_binary()  # skips without etcd
    run = launch("--failover", names=NAMES)
    pids = run.wait_ready(120)
    ((first, first_pid, epoch),) = masters(run)
    assert pids[first] == first_pid
    controller = re.search(r"controllerAddr=(127\.0\.0\.1:\d+)", run.text)
    assert controller, run.text
    assert run.addr("etcd") == controller[1]
    assert f"getSyncStateSet -a {controller[1]} -b broker-a" in run.text, run.text
    assert f"getBrokerEpoch -a {controller[1]} -b broker-a" in run.text, run.text
    assert f"`kill -9 {first_pid}` kills the master, {first}" in run.text, run.text
    assert (tmp_path / "run0" / "etcd").is_dir()  # etcd's data under the run's directory
    namesrv, old_addr = run.addr("namesrv"), run.addr(first)

    admin = [sys.executable, "-m", "aiorocketmq.client.admin"]
    out, code = run.run_beside(
        [*admin, "getSyncStateSet", "-a", controller[1], "-b", "broker-a"], dict(os.environ)
    )
    assert code == 0 and re.search(rf"^#MasterAddr\s+{old_addr}$", out, re.M), out

    async with Producer("pg_failover_run", namesrv_addr=namesrv) as producer:
        assert await acknowledged(run, producer, b"before", 60) == old_addr

        os.kill(first_pid, signal.SIGKILL)
        await draining(run, lambda: len(masters(run)) > 1, 60, "another replica is master")
        new, _, new_epoch = masters(run)[-1]
        assert new != first and new_epoch > epoch, run.text
        new_addr = run.addr(new)
        assert await acknowledged(run, producer, b"after", 60) == new_addr

    out, code = run.run_beside(
        [*admin, "getSyncStateSet", "-a", controller[1], "-b", "broker-a"], dict(os.environ)
    )
    assert code == 0 and re.search(rf"^#MasterAddr\s+{new_addr}$", out, re.M), out
    assert re.search(rf"^#MasterEpoch\s+{new_epoch}$", out, re.M), out

    run.proc.send_signal(signal.SIGTERM)
    assert run.wait_exit(60) == 1, run.text  # a server died: not a clean run
    assert f"stopped; not every server exited 0 ({first} was killed by SIGKILL)" in run.text
    assert wait_all_gone(list(pids.values()), 5) == []


def test_failover_without_etcd_says_how_to_get_it(tmp_path: Path) -> None:
    """No etcd on the PATH: the launcher says what installs it and exits 1, starting nothing."""
    env = {**os.environ, "PATH": str(tmp_path / "empty")}
    argv = [*LAUNCHER, "--failover", "--ephemeral", "--data", str(tmp_path / "d")]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "etcd is not installed: `make setup` installs Debian's etcd-server" in done.stderr
    assert "started, pid" not in done.stderr
