"""ACL in containers (issue 32 item 4): deploy/docker-compose.acl.yml over the compose file,
the accounts made on the host by ``python -m aiorocketmq.deploy.acl`` and mounted as
secrets, never part of an image; its services as local processes (tests/deploy/compose.py)
form a cluster whose health checks sign, which serves the accounts and refuses the rest."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq.client import Message, MQClientError
from aiorocketmq.client.sync import Producer
from aiorocketmq.deploy.acl import COMPOSE_BROKERS, compose_secrets
from tests.deploy.compose import COMPOSE, Project, load, start_order
from tests.harness import ROOT

OVERLAY = ROOT / "deploy" / "docker-compose.acl.yml"


@pytest.fixture
def secrets_dir(tmp_path: Path) -> Path:
    out = tmp_path / "secrets"
    compose_secrets(out)
    return out


@pytest.fixture
def project(tmp_path: Path, secrets_dir: Path) -> Iterator[Project]:
    started = Project(tmp_path, (OVERLAY,), {"AIOROCKETMQ_SECRETS": str(secrets_dir)})
    try:
        yield started
    finally:
        codes = started.stop()
        assert codes == dict.fromkeys(codes, 0), codes


def test_the_secrets_stay_on_the_host(secrets_dir: Path) -> None:
    """The generator's files: a 0700 directory, plain_acl.yml, tools.yml and each broker's
    conf file with the ACL keys at the secrets' container paths; .dockerignore keeps the
    directory out of every build context and .gitignore out of the repository; the base
    compose file names no secret, the overlay mounts each from the host."""
    assert stat.S_IMODE(secrets_dir.stat().st_mode) == 0o700
    for name in COMPOSE_BROKERS:
        conf = (secrets_dir / f"{name}.conf").read_text()
        assert "aclEnable=true\naclFile=/run/secrets/plain_acl.yml\n" in conf
        assert "innerClientAuthenticationCredentials={" in conf
    assert "admin: true" in (secrets_dir / "plain_acl.yml").read_text()
    assert "accessKey: rmqAdmin" in (secrets_dir / "tools.yml").read_text()
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert "deploy/secrets" in ignore[ignore.index("!deploy/") :]
    assert "/deploy/secrets/" in (ROOT / ".gitignore").read_text().splitlines()
    assert "secrets" not in load()
    merged = load({"AIOROCKETMQ_SECRETS": "/host/dir"}, OVERLAY)
    assert {s["file"] for s in merged["secrets"].values()} == {
        f"/host/dir/{n}" for n in ("plain_acl.yml", *(f"{b}.conf" for b in COMPOSE_BROKERS))
    }
    assert "secrets" not in merged["services"]["namesrv"]
    assert COMPOSE.parent == OVERLAY.parent  # relative paths resolve alike


@pytest.mark.slow
def test_the_acl_compose_cluster_serves_its_accounts(project: Project, secrets_dir: Path) -> None:
    """Every service passes its health check (a broker's signs with its inner account); the
    application account sends, an anonymous producer is refused, mqadmin with the generated
    tools.yml lists the cluster."""
    for service in start_order(project.services):
        project.start(service)
        assert project.wait_healthy(service), service
    project.procs["broker-a-s"].wait_for("ha_master_connected", 30)  # signed sync and HA
    namesrv = f"127.0.0.1:{project.ports[9876]}"
    app = json.loads((secrets_dir / "keys.json").read_text())["app"]
    with Producer("compose_acl", namesrv, **app) as p:
        assert p.send(Message("ComposeAcl", b"signed")).status.name == "SEND_OK"
    with (
        Producer("compose_anon", namesrv, retry_times_when_send_failed=0) as anon,
        pytest.raises(MQClientError, match="No accessKey is configured"),
    ):
        anon.send(Message("ComposeAcl", b"anonymous"))
    run = subprocess.run(
        [sys.executable, "-m", "aiorocketmq.client.admin", "clusterList", "-n", namesrv,
         "--tools-yml", str(secrets_dir / "tools.yml"), "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "broker-a" in run.stdout and "broker-b" in run.stdout
