"""`make run` (mqcluster, deploy/launcher.py) against real processes: the cluster stops on
SIGTERM, SIGINT and SIGHUP, with or without a reader on its output, and never outlives its
launcher (issue "`make run` orphans"); a server that dies stops it; `--reset`. Each test runs
its own cluster on free ports (`--ephemeral`)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tomllib
import urllib.request
from pathlib import Path

import pytest

from aiorocketmq import scripts
from aiorocketmq.deploy import procs
from tests.deploy.launcher import LAUNCHER, NAMES, Launcher, close, wait_all_gone
from tests.harness import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, prctl")
# the `mqadmin` the launcher means (next to this interpreter; the launcher runs in ROOT)
MQADMIN = Path(sys.executable).parent.absolute() / "mqadmin"


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


def test_a_server_that_dies_stops_the_cluster_with_a_message(launcher: Launcher) -> None:
    """Issue 19 item 2: the launcher shows each tier starting and ready with its time, then
    every endpoint, metrics included when the servers have them, and a first command; when a
    server dies (SIGKILL to broker-b) it names it and how it ended, stops the others and
    exits 1, leaving no process behind."""
    pids = launcher.wait_ready()
    for tier in ("name server", "masters"):
        assert re.search(rf"^mqcluster: {tier} ready in \d+\.\d s$", launcher.text, re.M)
    namesrv = launcher.addr("namesrv")
    typed = re.findall(rf"^mqcluster: try: (\S+) clusterList -n {namesrv}$", launcher.text, re.M)
    assert typed, launcher.text  # mqadmin by a path that works where the launcher runs
    assert typed[0] == "mqadmin" or (ROOT / typed[0]).absolute() == MQADMIN, typed
    check_metrics(launcher)
    os.kill(pids["broker-b"], signal.SIGKILL)
    assert launcher.wait_exit() == 1, launcher.text
    said = f"mqcluster: broker-b (pid {pids['broker-b']}) was killed by SIGKILL unexpectedly"
    assert said in launcher.text, launcher.text
    assert wait_all_gone(list(pids.values()), 1) == []
    assert len(launcher.lines("namesrv", "stopped")) == 1, launcher.text


def check_metrics(launcher: Launcher) -> None:
    """Each server's line shows its metrics URL, which answers -- unless the servers do not
    know ``metricsPort`` yet (they warn that the key is unknown, and show none)."""
    ends = launcher.endpoints()
    assert list(ends) == NAMES, launcher.text
    if "config_key_unknown key='metricsPort'" in launcher.text:
        assert not any("metrics" in line for line in ends.values()), ends
        return
    for name, line in ends.items():
        found = re.search(r"metrics (http://127\.0\.0\.1:\d+/metrics)$", line)
        assert found, (name, line)
        with urllib.request.urlopen(found[1], timeout=5) as resp:
            assert resp.status == 200


def reset(cwd: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """``mqcluster --reset`` in ``cwd`` (this checkout's code on the path)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [*LAUNCHER, "--reset", *options]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=30)


def test_reset_empties_data_but_not_while_its_cluster_runs(tmp_path: Path) -> None:
    """Issue 19 item 2: `mqcluster --reset` refuses while a launcher runs from ./data (so does a
    second launcher), then removes the servers' directories from ./data of the current
    directory, says what it removed, and leaves alone what it did not make."""
    data = tmp_path / "data"
    run = Launcher(data)
    try:
        run.wait_ready()
        refused = reset(tmp_path)
        assert refused.returncode == 1, refused
        assert f"a cluster (launcher pid {run.proc.pid}) is running from ./data" in refused.stderr
        second = Launcher(data)
        try:
            assert second.wait_exit() == 1 and "stop it first" in second.text, second.text
        finally:
            close(second)
        assert sorted(p.name for p in data.iterdir()) == [*NAMES[1:], "mqcluster.pid"]
        run.proc.send_signal(signal.SIGTERM)
        assert run.wait_exit() == 0, run.text
    finally:
        close(run)
    (data / "notes.txt").write_text("mine")
    done = reset(tmp_path)
    assert done.returncode == 0, done
    assert "mqcluster: removed ./data/broker-a, ./data/broker-b (" in done.stderr, done.stderr
    assert "left alone in ./data (not the launcher's): notes.txt" in done.stderr, done.stderr
    assert [p.name for p in data.iterdir()] == ["notes.txt"]
    (data / "notes.txt").unlink()
    assert "mqcluster: removed ./data\n" in reset(tmp_path).stderr and not data.exists()


def test_console_script_and_its_conf_files() -> None:
    """Issue 19 item 2: `mqcluster` is an installed console script (pyproject) whose target
    parses the launcher's options, and the conf files it starts the servers with are package
    data, so an installed launcher finds them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    target = project["project"]["scripts"]["mqcluster"]
    assert target == "aiorocketmq.scripts:mqcluster"  # checks the extra, then runs the launcher
    assert scripts.SCRIPTS["mqcluster"].target == "aiorocketmq.deploy.launcher:main"
    assert "aiorocketmq.deploy" in project["tool"]["setuptools"]["packages"]
    globs = project["tool"]["setuptools"]["package-data"]["aiorocketmq.deploy"]
    packaged = {p for g in globs for p in (ROOT / "deploy").glob(g)}
    for spec in procs.plan(procs.MAX_SLAVES):
        assert Path(procs.conf_path(spec.argv[spec.argv.index("-c") + 1])) in packaged
    help_ = subprocess.run([*LAUNCHER, "--help"], cwd=ROOT, capture_output=True, text=True)
    assert help_.returncode == 0 and help_.stdout.startswith("usage: mqcluster ")
    assert "--reset" in help_.stdout
