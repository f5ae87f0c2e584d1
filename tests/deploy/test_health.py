"""deploy/health.py, the compose services' health checks (issue 31 item 3), against real
servers: a name server is healthy when it answers; a broker when it is registered with the
name server and answers at the registered address as itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster import running
from tests.harness import ROOT


def health(*args: str, namesrv_env: str | None = None) -> subprocess.CompletedProcess[str]:
    """The check with ``args``; NAMESRV_ADDR set to ``namesrv_env`` (else unset)."""
    env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    if namesrv_env is not None:
        env["NAMESRV_ADDR"] = namesrv_env
    return subprocess.run(
        [sys.executable, "-m", "aiorocketmq.deploy.health", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def broker_conf(tmp_path: Path, name: str, broker_id: int = 0) -> str:
    conf = tmp_path / f"{name}-{broker_id}.conf"
    conf.write_text(f"# a broker's conf file\nbrokerName={name}\nbrokerId={broker_id}\n")
    return str(conf)


def test_a_name_server_is_healthy_while_it_answers(tmp_path: Path) -> None:
    with running(tmp_path / "a") as cluster:
        addr = cluster.namesrv_addr
        ok = health("namesrv", addr)
        assert ok.returncode == 0, ok
        assert ok.stdout == f"healthy: name server {addr} answers (0 broker groups registered)\n"
    gone = health("--timeout", "1", "namesrv", addr)
    assert gone.returncode == 1 and gone.stdout.startswith(f"unhealthy: {addr}"), gone


@pytest.mark.slow
def test_a_broker_is_healthy_only_while_registered_and_answering(tmp_path: Path) -> None:
    """broker-x runs registered with name server A: healthy against A (-n or NAMESRV_ADDR);
    against name server B, where it never registered, unhealthy though it answers (-n before
    NAMESRV_ADDR); as broker-x's slave (brokerId 1, not registered) unhealthy; hung (SIGSTOP:
    its connection to A stays open, so A keeps its registration) unhealthy: it does not answer
    at the registered address; killed, unhealthy."""
    conf = broker_conf(tmp_path, "broker-x")
    with running(tmp_path / "a", ("broker-x",)) as a, running(tmp_path / "b") as b:
        addr = a.brokers["broker-x"].addr
        ok = health("broker", conf, "-n", a.namesrv_addr)
        assert ok.returncode == 0, ok
        assert (
            ok.stdout
            == f"healthy: broker-x (brokerId 0) is registered at {addr} and answers there\n"
        )
        assert health("broker", conf, namesrv_env=a.namesrv_addr).stdout == ok.stdout
        elsewhere = health("broker", conf, "-n", b.namesrv_addr, namesrv_env=a.namesrv_addr)
        assert elsewhere.returncode == 1, elsewhere
        expected = f"unhealthy: broker-x (brokerId 0) is not registered with {b.namesrv_addr}\n"
        assert elsewhere.stdout == expected
        slave = health("broker", broker_conf(tmp_path, "broker-x", 1), "-n", a.namesrv_addr)
        assert slave.returncode == 1 and "(brokerId 1) is not registered" in slave.stdout, slave
        process = a.brokers["broker-x"].proc
        assert process is not None
        process.proc.send_signal(signal.SIGSTOP)  # hung: its connections stay open
        try:
            hung = health("--timeout", "1", "broker", conf, "-n", a.namesrv_addr)
        finally:
            process.proc.send_signal(signal.SIGCONT)
        assert hung.returncode == 1 and hung.stdout.startswith(f"unhealthy: {addr}"), hung
        a.kill_broker("broker-x")
        dead = health("--timeout", "1", "broker", conf, "-n", a.namesrv_addr)
        assert dead.returncode == 1 and dead.stdout.startswith("unhealthy: "), dead


def test_the_broker_check_reads_the_name_server_as_the_broker_does(tmp_path: Path) -> None:
    """-n, else the conf's namesrvAddr, else NAMESRV_ADDR (broker/__main__.py's order); none:
    unhealthy, saying so; an unreadable conf file: unhealthy, naming it."""
    conf = broker_conf(tmp_path, "broker-x")
    none = health("broker", conf)
    assert none.returncode == 1 and "no name server" in none.stdout, none
    missing = health("broker", str(tmp_path / "absent.conf"), "-n", "127.0.0.1:1")
    assert missing.returncode == 1 and "absent.conf" in missing.stdout, missing
