"""``make run ARGS="--acl"`` (mqcluster --acl, deploy/acl.py) against real processes: a demo
plain_acl.yml with an admin and an application account (generated keys, kept across runs),
tools.yml for mqadmin, brokers started with aclEnable and their inner credentials from a
private conf file (no secret on a command line), the keys and their use printed; and the
cluster it starts refuses an unsigned client and serves the accounts (SDK and mqadmin)."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.deploy.launcher import LAUNCHER, Launcher, close
from tests.harness import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, prctl")
NAMES = ["namesrv", "broker-a", "broker-b"]
PRINTED = re.compile(r"(admin|app) account:\s+accessKey=(\S+) secretKey=(\S+)")


def accounts(text: str) -> dict[str, tuple[str, str]]:
    return {kind: (ak, sk) for kind, ak, sk in PRINTED.findall(text)}


def test_acl_files_keys_and_brokers(launch: Callable[..., Launcher], tmp_path: Path) -> None:
    """The files, private; keys of 8+ characters, printed with their use; the brokers run
    with the ACL keys from their conf file and no secret in any command line; a second run
    keeps the accounts; --reset removes them."""
    first = launch("--acl", names=NAMES)
    pids = first.wait_ready(60)
    printed = accounts(first.text)
    assert set(printed) == {"admin", "app"}, first.text
    for ak, sk in printed.values():
        assert len(ak) >= 8 and len(sk) >= 8
    data = tmp_path / "run0"
    home = data / "acl"
    plain = (home / "conf" / "plain_acl.yml").read_text()
    admin_ak, admin_sk = printed["admin"]
    app_ak, app_sk = printed["app"]
    assert f"accessKey: {admin_ak}\n    secretKey: {admin_sk}\n    admin: true" in plain
    assert f"accessKey: {app_ak}\n    secretKey: {app_sk}\n    admin: false" in plain
    tools = (home / "conf" / "tools.yml").read_text()
    assert f"accessKey: {admin_ak}\nsecretKey: {admin_sk}\n" in tools
    for name in ("broker-a", "broker-b"):
        conf = (home / f"{name}.conf").read_text()
        assert "aclEnable=true\n" in conf and f"aclFile={home}/conf/plain_acl.yml\n" in conf
        inner = json.loads(conf.split("innerClientAuthenticationCredentials=")[1].splitlines()[0])
        assert inner == {"accessKey": admin_ak, "secretKey": admin_sk}
        assert f"brokerName={name}\n" in conf  # the installed file's keys, kept
    for path in [*home.rglob("*.yml"), *home.glob("*.conf"), home / "keys.json"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    for name, pid in pids.items():
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode()
        assert admin_sk not in cmdline and app_sk not in cmdline, name
        if name != "namesrv":
            assert f"{home}/{name}.conf" in cmdline
    assert f"ROCKETMQ_HOME={home}" in first.text, first.text
    assert f'access_key="{app_ak}", secret_key="{app_sk}"' in first.text
    first.proc.terminate()
    assert first.wait_exit() == 0, first.text

    again = Launcher(data, "--acl", names=NAMES)
    try:
        again.wait_ready(60)
        assert accounts(again.text) == printed
        again.proc.terminate()
        assert again.wait_exit() == 0, again.text
    finally:
        close(again)
    reset = subprocess.run([*LAUNCHER, "--data", str(data), "--reset"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert reset.returncode == 0, reset.stderr
    assert not home.exists()


SCRIPT = """
import asyncio, sys
from aiorocketmq import Message, MQClientError, Producer

async def main(ns, ak, sk):
    async with Producer("pg_acl_demo", namesrv_addr=ns, access_key=ak, secret_key=sk) as p:
        r = await p.send(Message("AclDemo", b"signed"))
        print("SIGNED", r.status.name)
    async with Producer("pg_acl_anon", namesrv_addr=ns, retry_times_when_send_failed=0) as p:
        try:
            await p.send(Message("AclDemo", b"anonymous"))
            print("ANONYMOUS SERVED")
        except MQClientError as exc:
            print("ANONYMOUS REFUSED", exc)

asyncio.run(main(*sys.argv[1:]))
"""


@pytest.mark.slow
def test_the_acl_cluster_serves_its_accounts_and_refuses_others(
    launch: Callable[..., Launcher], tmp_path: Path
) -> None:
    """Needs the broker's ACL (i32-acl): the app account's producer is served, an anonymous
    one refused with Apache's remark; mqadmin with ROCKETMQ_HOME (tools.yml: the admin
    account) creates a topic, without it the broker refuses."""
    cluster = launch("--acl", names=NAMES)
    cluster.wait_ready(60)
    ns = cluster.addr("namesrv")
    home = tmp_path / "run0" / "acl"
    app_ak, app_sk = accounts(cluster.text)["app"]
    env = {k: v for k, v in os.environ.items() if k != "ROCKETMQ_HOME"}
    broker = cluster.addr("broker-a")
    out, code = cluster.run_beside(
        [sys.executable, "-m", "aiorocketmq.client.admin", "updateTopic", "-n", ns, "-b",
         broker, "-t", "AclDemo"], {**env, "ROCKETMQ_HOME": str(home)})  # fmt: skip
    assert code == 0, out
    out, code = cluster.run_beside(
        [sys.executable, "-m", "aiorocketmq.client.admin", "updateTopic", "-n", ns, "-b",
         broker, "-t", "AclDemoAnon"], env)  # fmt: skip
    assert code == 1 and "No accessKey is configured" in out, out
    out, code = cluster.run_beside([sys.executable, "-c", SCRIPT, ns, app_ak, app_sk], env)
    assert code == 0, out
    assert "SIGNED SEND_OK" in out, out
    assert "ANONYMOUS REFUSED" in out and "No accessKey is configured" in out, out
