"""`make run` (deploy/run_local.py) against real processes: the cluster stops on SIGTERM, SIGINT
and SIGHUP, with or without a reader on its output, and never outlives its launcher (issue
"`make run` orphans"). Each test runs its own cluster on free ports (`--ephemeral`)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from tests.deploy.launcher import Launcher, wait_all_gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, prctl")


@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name
)
def test_stop_signal_stops_brokers_then_namesrv_and_exits_0(
    launcher: Launcher, signum: signal.Signals
) -> None:
    """Issue "`make run` orphans": SIGTERM (`kill <pid>`), SIGINT (Ctrl-C) and SIGHUP (terminal
    closed) to the launcher stop every server -- the brokers before the name server, each
    with exit 0 -- and the launcher exits 0."""
    pids = launcher.wait_ready()
    launcher.proc.send_signal(signum)
    assert launcher.wait_exit() == 0, launcher.text
    assert wait_all_gone(list(pids.values()), 1) == []
    namesrv_stopping = launcher.lines("namesrv", "stopping")
    assert len(namesrv_stopping) == 1, launcher.text
    for broker in ("broker-a", "broker-b"):
        assert launcher.lines(broker, "stopped")[0] < namesrv_stopping[0], launcher.text


def test_closed_terminal_stops_cluster(launcher: Launcher) -> None:
    """Issue "`make run` orphans": the terminal closed -- SIGHUP with nobody left reading the
    launcher's output -- still stops every server and the launcher exits 0: a broken stdout
    neither kills its pump threads nor blocks the stop."""
    pids = launcher.wait_ready()
    assert launcher.proc.stdout is not None
    launcher.proc.stdout.close()
    launcher.proc.send_signal(signal.SIGHUP)
    assert launcher.proc.wait(30) == 0
    assert wait_all_gone(list(pids.values()), 1) == []


def test_servers_stop_by_themselves_when_launcher_is_killed(
    launcher: Launcher, tmp_path: Path
) -> None:
    """Issue "`make run` orphans": SIGKILL of the launcher leaves no server behind: each gets
    SIGTERM from the kernel (PR_SET_PDEATHSIG) and stops gracefully with nobody reading its
    output -- the brokers' abort files are gone, so their next start is a clean one."""
    pids = launcher.wait_ready()
    aborts = [tmp_path / broker / "abort" for broker in ("broker-a", "broker-b")]
    assert all(path.exists() for path in aborts)
    launcher.proc.kill()
    launcher.proc.wait()
    assert wait_all_gone(list(pids.values()), 15) == []
    assert not any(path.exists() for path in aborts)
