"""The source's and sink's credentials and TLS options (issue 32 item 4; spark/access.py):
named for Kafka users, checked before any I/O, never shown; and a real read and write with
them, every request of the driver's and the executors' clients verified on its way to the
cluster (tests/signed_proxy.py), the secret absent from Spark's plans."""

from __future__ import annotations

import asyncio
import re
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.spark.access import SECRETS, Access
from aiorocketmq.spark.options import read_options, write_options
from tests.broker.acl_setup import acl_files
from tests.cluster import Cluster, running
from tests.signed_proxy import ADVERTISED_SETS, Audit, forwarding, self_signed

AK, SK, TOKEN = "sparkAK01", "spark-s3cret-key", "spark-token-1"
NS = {"nameServer": "127.0.0.1:9876", "topic": "t"}


def read(**options: str) -> Any:
    return read_options({**NS, **options}, streaming=False)


def test_security_options_make_the_access() -> None:
    opts = read(accessKey=AK, secretKey=SK, securityToken=TOKEN)
    assert opts.access == Access(access_key=AK, secret_key=SK, security_token=TOKEN)
    assert read().access == Access()
    w = write_options({"nameServer": "h:1", "accesskey": AK, "secretkey": SK, "tls": "true"},
                      streaming=True)  # fmt: skip
    assert w.access == Access(access_key=AK, secret_key=SK, tls=True)
    ca = read(**{"tls.caFile": "/ca.pem", "tls.checkHostname": "false"}).access
    assert (ca.tls, ca.tls_ca_file, ca.tls_check_hostname) == (True, "/ca.pem", False)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"accessKey": AK}, "accessKey and secretKey go together"),
        ({"secretKey": SK}, "accessKey and secretKey go together"),
        ({"securityToken": TOKEN}, "securityToken needs accessKey and secretKey"),
        ({"accessKey": AK, "secretKey": "  "}, "secretKey must not be blank"),
        ({"tls": "yes"}, "tls must be true or false"),
        ({"tls.keyFile": "k.pem"}, "tls.keyFile needs tls.certFile"),
        ({"tls.checkHostname": "false"}, "tls.checkHostname applies only with tls.caFile"),
        ({"tls": "false", "tls.caFile": "ca.pem"}, "tls is false but tls.caFile"),
        ({"tls.certFile": "c.pem", "tls.keyPassword": SK}, "tls.keyPassword needs tls.keyFile"),
    ],
)
def test_combinations_that_do_not_fit_are_refused(options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        read(**options)
    assert SK not in str(info.value) and TOKEN not in str(info.value)


def test_secrets_never_show() -> None:
    """Not in the options' repr (they travel to executors, pickled) nor in an error."""
    tls = {"tls.certFile": "c.pem", "tls.keyFile": "k.pem", "tls.keyPassword": SK}
    opts = read(accessKey=AK, secretKey=SK, securityToken=TOKEN, **tls)
    assert AK in repr(opts)
    assert SK not in repr(opts) and TOKEN not in repr(opts)
    with pytest.raises(ValueError, match="secretKey must be given as a string") as info:
        read_options({**NS, "secretKey": 12345678}, streaming=False)  # type: ignore[dict-item]
    assert "12345678" not in str(info.value)


def test_the_sdk_keywords(tmp_path: Path) -> None:
    """tls=true alone: the SDK's tls=True (verifying nothing); a CA file: a verifying
    context, names checked unless tls.checkHostname=false; a client certificate loads."""
    assert Access(tls=True).keywords()["tls"] is True
    assert Access().keywords() == {"access_key": None, "secret_key": None,
                                   "security_token": None, "tls": False}  # fmt: skip
    cert, key = self_signed(tmp_path)
    ctx = Access(tls=True, tls_ca_file=str(cert)).keywords()["tls"]
    assert isinstance(ctx, ssl.SSLContext) and ctx.verify_mode is ssl.CERT_REQUIRED
    assert ctx.check_hostname
    loose = Access(tls=True, tls_ca_file=str(cert), tls_check_hostname=False).keywords()["tls"]
    assert isinstance(loose, ssl.SSLContext) and not loose.check_hostname
    mutual = Access(tls=True, tls_cert_file=str(cert), tls_key_file=str(key)).keywords()["tls"]
    assert isinstance(mutual, ssl.SSLContext) and mutual.verify_mode is ssl.CERT_NONE


# ------------------------------------------------------------------ with a Spark session


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(tmp_path_factory.mktemp("spark-access"), ("broker-a",), ADVERTISED_SETS) as c:
        yield c


@pytest.fixture(scope="module")
def audited(cluster: Cluster) -> Iterator[tuple[Audit, str]]:
    """Verifying forwarders, on their own loop thread (Spark's calls block this one)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="forwarders", daemon=True)
    thread.start()
    audit = Audit(SK)
    cm = forwarding(cluster, audit)
    ns = asyncio.run_coroutine_threadsafe(cm.__aenter__(), loop).result(30)
    try:
        yield audit, ns
    finally:
        asyncio.run_coroutine_threadsafe(cm.__aexit__(None, None, None), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@pytest.mark.spark
@pytest.mark.slow
def test_signed_write_and_read(
    spark: Any, audited: tuple[Audit, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The sink and the source with accessKey/secretKey/securityToken: the rows arrive, every
    request (driver planning, executors' sends and pulls) is signed with the account, and
    explain() shows the options redacted (Spark's spark.redaction.regex)."""
    audit, ns = audited
    sec = {"accessKey": AK, "secretKey": SK, "securityToken": TOKEN}
    rows = [(f"row{i}",) for i in range(20)]
    df = spark.createDataFrame(rows, "body string")
    writer = df.write.format("rocketmq").mode("append").option("nameServer", ns)
    writer.option("topic", "SparkSigned").options(**sec).save()
    reader = spark.read.format("rocketmq").option("nameServer", ns).options(**sec)
    read_df = reader.option("subscribe", "SparkSigned").load()
    got = sorted(bytes(r.body).decode() for r in read_df.collect())
    assert got == sorted(f"row{i}" for i in range(20))

    codes = audit.codes()
    assert {C.GET_ROUTEINFO_BY_TOPIC, C.PULL_MESSAGE, C.GET_MAX_OFFSET} <= codes, codes
    assert codes & {C.SEND_MESSAGE_V2, C.SEND_BATCH_MESSAGE}, codes
    assert audit.unsigned() == [], audit.unsigned()[:5]
    assert {(s.access_key, s.token) for s in audit.requests} == {(AK, TOKEN)}

    capsys.readouterr()
    read_df.explain(True)
    read_df.explain("formatted")
    plans = capsys.readouterr().out
    assert plans.strip()
    assert SK not in plans and TOKEN not in plans, plans
    # where Spark shows options (the UI, SaveIntoDataSourceCommand), spark.redaction.regex
    # hides the values of the keys it matches: by default every secret option's name
    config = getattr(spark._jvm.org.apache.spark.internal.config, "package$").__getattr__("MODULE$")
    regex = str(spark.sparkContext._jsc.sc().conf().get(config.SECRET_REDACTION_PATTERN()))
    for name in (*SECRETS, "accessKey"):
        assert re.search(regex.replace("(?i)", ""), name, re.IGNORECASE), (name, regex)


ACL_AK, ACL_SK = "sparkApp01", "sparkAppSecret1"
PLAIN_ACL = f"""\
accounts:
  - accessKey: {ACL_AK}
    secretKey: {ACL_SK}
    admin: true
"""


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("spark-acl")
    with running(root / "c", ("broker-a",), acl_files(root, PLAIN_ACL)) as c:
        yield c


@pytest.mark.spark
@pytest.mark.slow
def test_an_acl_cluster_serves_the_options_account(spark: Any, acl_cluster: Cluster) -> None:
    """Brokers with aclEnable: the sink and the source with the account's keys write and read;
    without them the write fails with the broker's refusal."""
    ns = acl_cluster.namesrv_addr
    sec = {"accessKey": ACL_AK, "secretKey": ACL_SK}
    df = spark.createDataFrame([(f"acl{i}",) for i in range(5)], "body string")

    def writer() -> Any:  # a new one each time: option() changes the writer it is called on
        return df.write.format("rocketmq").mode("append").option("nameServer", ns)

    writer().option("topic", "SparkAcl").options(**sec).save()
    reader = spark.read.format("rocketmq").option("nameServer", ns).options(**sec)
    rows = reader.option("subscribe", "SparkAcl").load().collect()
    assert sorted(bytes(r.body).decode() for r in rows) == [f"acl{i}" for i in range(5)]
    with pytest.raises(Exception, match="No accessKey is configured") as info:
        writer().option("topic", "SparkAcl").save()
    assert ACL_SK not in str(info.value)
