"""mqadmin's credentials and TLS (issue 32 item 4; client/admin/access.py): Apache's
``$ROCKETMQ_HOME/conf/tools.yml``, our flags and variables, and ``--tls``; every request of a
command signed, the SDK clients some commands start included (checked by forwarders that
verify each request as an ACL broker would: tests/signed_proxy.py)."""

from __future__ import annotations

import argparse
import asyncio
import os
import ssl
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiorocketmq.client.admin import access
from aiorocketmq.client.admin.access import AccessError, read_tools_yml, resolve
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from tests.cluster import Cluster, running
from tests.harness import ROOT
from tests.signed_proxy import ADVERTISED_SETS, Audit, forwarding, self_signed, server_context

# Apache 4.9.8's distribution/conf/tools.yml, license header and trailing spaces as shipped
APACHE_TOOLS_YML = """# Licensed to the Apache Software Foundation (ASF) under one or more
# contributor license agreements.

accessKey: rocketmq2
secretKey: 12345678
    \n"""
AK, SK = "rocketmq2", "12345678"


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    access.add_arguments(parser)
    return parser.parse_args(list(argv))


def home_with(tmp_path: Path, text: str) -> dict[str, str]:
    conf = tmp_path / "home" / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "tools.yml").write_text(text)
    return {"ROCKETMQ_HOME": str(tmp_path / "home")}


def test_apaches_tools_yml_is_read_as_apache_reads_it() -> None:
    assert read_tools_yml(APACHE_TOOLS_YML, "tools.yml") == {"accessKey": AK, "secretKey": SK}
    quoted = "accessKey: 'my ak'\nsecretKey: \"s#cret: x\"  \n---\n"
    assert read_tools_yml(quoted, "t") == {"accessKey": "my ak", "secretKey": "s#cret: x"}
    assert read_tools_yml("accessKey: ak1234567 # the team's\n", "t") == {"accessKey": "ak1234567"}
    with pytest.raises(AccessError, match=r"^t:3: not a 'key: value' line"):
        read_tools_yml("accessKey: a\nnested:\n  secretKey: b\n", "t")


def test_where_the_credentials_come_from(tmp_path: Path) -> None:
    """Flags, else the variables, else tools.yml ($ROCKETMQ_HOME/conf, or --tools-yml); the
    first source with any key gives both; a missing default file signs nothing."""
    home = home_with(tmp_path, APACHE_TOOLS_YML)
    warn: list[str] = []
    got = resolve(parse(), home, warn)
    assert (got.access_key, got.secret_key, got.source) == (
        AK,
        SK,
        f"{home['ROCKETMQ_HOME']}/conf/tools.yml",
    )
    env = {**home, "ROCKETMQ_ACCESS_KEY": "envAK123", "ROCKETMQ_SECRET_KEY": "envSK123",
           "ROCKETMQ_SECURITY_TOKEN": "tok"}  # fmt: skip
    got = resolve(parse(), env, warn)
    assert (got.access_key, got.secret_key, got.security_token) == ("envAK123", "envSK123", "tok")
    got = resolve(parse("--access-key", "flagAK12", "--secret-key", "flagSK12"), env, warn)
    assert (got.access_key, got.secret_key) == ("flagAK12", "flagSK12")
    other = tmp_path / "other.yml"
    other.write_text("accessKey: fileAK12\nsecretKey: fileSK12\n")
    got = resolve(parse("--tools-yml", str(other)), home, warn)
    assert (got.access_key, got.secret_key) == ("fileAK12", "fileSK12")
    assert resolve(parse(), {}, warn).access_key is None
    assert resolve(parse(), {"ROCKETMQ_HOME": str(tmp_path / "none")}, warn).access_key is None
    assert warn == []


def test_half_pairs_blank_keys_and_missing_files(tmp_path: Path) -> None:
    warn: list[str] = []
    with pytest.raises(AccessError, match="secret key is missing") as info:
        resolve(parse("--access-key", "flagAK12"), {}, warn)
    with pytest.raises(AccessError, match=r"ROCKETMQ_ACCESS_KEY.*access key is missing"):
        resolve(parse(), {"ROCKETMQ_SECRET_KEY": "hidden-secret"}, warn)
    assert "hidden-secret" not in str(info.value)
    with pytest.raises(AccessError, match="no such file"):
        resolve(parse("--tools-yml", str(tmp_path / "nope.yml")), {}, warn)
    blank = home_with(tmp_path, "accessKey: rocketmq2\nsecretKey:\n")
    got = resolve(parse(), blank, warn)
    assert got.access_key is None
    assert warn == [f"{tmp_path}/home/conf/tools.yml: accessKey or secretKey is blank: "
                    "requests are not signed"]  # fmt: skip
    with pytest.raises(AccessError, match="--tls-key needs --tls-cert"):
        resolve(parse("--tls-key", "k.pem"), {}, warn)
    with pytest.raises(AccessError, match="TLS files"):
        resolve(parse("--tls-ca", str(tmp_path / "missing.pem")), {}, warn)


def test_tls_options_make_a_context(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    plain = resolve(parse("--tls"), {}, [])
    assert plain.tls is not None and plain.tls.verify_mode is ssl.CERT_NONE
    verifying = resolve(parse("--tls-ca", str(cert), "--tls-cert", str(cert),
                              "--tls-key", str(key)), {}, [])  # fmt: skip
    assert verifying.tls is not None and verifying.tls.verify_mode is ssl.CERT_REQUIRED
    assert resolve(parse(), {}, []).tls is None


# ------------------------------------------------------------------ real runs, audited


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running(tmp_path / "c", ("broker-a", "broker-b"), ADVERTISED_SETS) as c:
        yield c


async def mqadmin_process(env: dict[str, str], *argv: str) -> tuple[int, str, str]:
    """The console entry as a real process (its own loop: the forwarders run in ours)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aiorocketmq.client.admin", *argv,
        cwd=ROOT, env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(120):
        out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.slow
async def test_every_command_request_is_signed_with_tools_yml(
    cluster: Cluster, tmp_path: Path
) -> None:
    """With $ROCKETMQ_HOME/conf/tools.yml, commands that ask the name server, the brokers
    directly, and through an SDK Producer and PullConsumer (sendMessage, consumeMessage)
    sign every request; without it, nothing is signed (the audit can fail)."""
    audit = Audit(SK)
    env = {**home_with(tmp_path, APACHE_TOOLS_YML), "NAMESRV_ADDR": ""}
    async with forwarding(cluster, audit) as ns:
        runs = [
            ("updateTopic", "-c", "DefaultCluster", "-t", "AdminSigned"),
            ("topicList",),
            ("clusterList",),
            ("topicStatus", "-t", "AdminSigned"),
            ("sendMessage", "-t", "AdminSigned", "-p", "signed body"),
            ("consumeMessage", "-t", "AdminSigned", "-c", "1"),
            (
                "brokerStatus",
                "-b",
                f"{ADVERTISED_SETS['brokerIP1']}:{cluster.brokers['broker-a'].port}",
            ),
        ]
        for argv in runs:
            code, out, err = await mqadmin_process(env, argv[0], "-n", ns, *argv[1:])
            assert code == 0, (argv, out, err)
        codes = audit.codes()
        for expected in (C.UPDATE_AND_CREATE_TOPIC, C.GET_ROUTEINFO_BY_TOPIC,
                         C.GET_BROKER_CLUSTER_INFO, C.SEND_MESSAGE_V2, C.PULL_MESSAGE,
                         C.GET_BROKER_RUNTIME_INFO, C.GET_MAX_OFFSET):  # fmt: skip
            assert expected in codes, C(expected).name
        assert audit.unsigned() == [], audit.unsigned()[:5]
        assert {s.access_key for s in audit.requests} == {AK}

        audit.requests.clear()
        code, _out, err = await mqadmin_process({"ROCKETMQ_HOME": ""}, "topicList", "-n", ns)
        assert code == 0, err
        assert audit.requests and audit.unsigned() == audit.requests


async def test_tls_flag_reaches_a_tls_cluster(cluster: Cluster, tmp_path: Path) -> None:
    """--tls talks to TLS ports (any certificate); --tls-ca verifies them; plaintext fails."""
    cert, key = self_signed(tmp_path)
    async with forwarding(cluster, Audit(SK), server_context(cert, key)) as ns:
        code, out, err = await mqadmin_process({}, "clusterList", "-n", ns, "--tls", "--json")
        assert code == 0, err
        assert "broker-a" in out
        code, out, err = await mqadmin_process(
            {}, "topicList", "-n", ns, "--tls-ca", str(cert), "--json"
        )
        assert code == 0, err
        code, out, err = await mqadmin_process({}, "topicList", "-n", ns, "--timeout", "3")
        assert code == 1 and err.startswith("mqadmin topicList: "), err
