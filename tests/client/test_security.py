"""Every client class takes ``access_key``/``secret_key`` (``security_token``) and ``tls``
(issue 32 item 4): each request it sends, on every path, is signed as an ACL 1.0 broker checks
it; clients with other credentials or TLS never share connections; the secret never shows in
``repr``, logs or errors.

The paths are checked through signed_proxy.py: real name server and brokers behind real
forwarders that verify each request as 4.9.8's PlainAccessValidator would.
"""

from __future__ import annotations

import inspect
import logging
import ssl
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

import aiorocketmq
from aiorocketmq import (
    ConsumeFromWhere,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    LocalTransactionState,
    Message,
    MessageExt,
    MQClientError,
    Producer,
    PullConsumer,
    PushConsumer,
    TransactionProducer,
    tls_context,
)
from aiorocketmq.client import api, sync
from aiorocketmq.client.consumer.types import PushOptions
from aiorocketmq.client.core.instance import ClientInstance
from aiorocketmq.client.core.security import Security, SecuritySettings, unverified_context
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from tests.cluster import Cluster, running
from tests.signed_proxy import ADVERTISED, ADVERTISED_SETS, Audit, forwarding
from tests.util import wait_until

AK, SK, TOKEN = "clientAK01", "s3cret-Key-4-tests", "token-1234567"
CLIENT_CLASSES = [
    Producer, TransactionProducer, PushConsumer, PullConsumer,
    sync.Producer, sync.TransactionProducer, sync.PushConsumer, sync.PullConsumer,
]  # fmt: skip
KEYWORDS = {"access_key": AK, "secret_key": SK, "security_token": TOKEN, "tls": True}


class Commit:
    async def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        if msg.tags == "later":  # left to the broker's check-back
            raise RuntimeError("unknown yet")
        return LocalTransactionState.COMMIT_MESSAGE

    async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE


def build(cls: Any, **kw: Any) -> Any:
    if cls in (TransactionProducer, sync.TransactionProducer):
        return cls("pg_sec", Commit(), namesrv_addr="127.0.0.1:9876", **kw)
    return cls("g_sec", namesrv_addr="127.0.0.1:9876", **kw)


def test_every_client_class_takes_the_security_keywords() -> None:
    """The four keywords on every client class, the sync facades and api.Remote.open; the
    options hold them (the secrets out of repr)."""
    for cls in CLIENT_CLASSES:
        client = build(cls, **KEYWORDS)
        inner = getattr(client, "_tx", None) or next(
            (getattr(client, a) for a in ("_producer", "_consumer", "_c") if hasattr(client, a)),
            client,
        )
        opts = inner.options
        assert (opts.access_key, opts.secret_key, opts.security_token) == (AK, SK, TOKEN), cls
        assert opts.tls is True
        assert SK not in repr(opts) and TOKEN not in repr(opts), repr(opts)
    for name in ("Producer", "PushConsumer", "PullConsumer"):
        params = inspect.signature(getattr(aiorocketmq, name)).parameters
        if "options" not in params:  # Producer lists its keywords
            assert set(KEYWORDS) <= set(params), name
    params = inspect.signature(api.Remote.open).parameters
    assert set(KEYWORDS) <= set(params)


@pytest.mark.parametrize(
    ("keywords", "error"),
    [
        ({"access_key": AK}, "access_key and secret_key go together"),
        ({"secret_key": SK}, "access_key and secret_key go together"),
        ({"security_token": TOKEN}, "security_token needs access_key and secret_key"),
        ({"access_key": "", "secret_key": SK}, "must not be empty"),
    ],
)
def test_an_incomplete_account_is_refused_at_construction(
    keywords: dict[str, str], error: str
) -> None:
    """A half-given account fails the constructor, never quoting the secret."""
    for cls in CLIENT_CLASSES:
        with pytest.raises(ValueError, match=error) as info:
            build(cls, **keywords)
        assert SK not in str(info.value) and TOKEN not in str(info.value)


def test_tls_true_verifies_nothing_as_apaches_default_client() -> None:
    """tls=True: an encrypting context that accepts any certificate for any name (Apache's
    client with tls.test.mode / authServer=false); False and None: plaintext; a context is
    used as given; anything else is a TypeError."""
    ctx = Security.from_keywords(None, None, tls=True).tls
    assert ctx is unverified_context()
    assert ctx.verify_mode is ssl.CERT_NONE and not ctx.check_hostname
    assert Security.from_keywords(None, None, tls=False).tls is None
    assert Security.from_keywords(None, None, tls=None).tls is None
    mine = ssl.create_default_context()
    assert Security.from_keywords(None, None, tls=mine).tls is mine
    with pytest.raises(TypeError, match=r"tls: True, an ssl\.SSLContext"):
        Producer("g", namesrv_addr="h:1", tls="yes")  # type: ignore[arg-type]
    verifying = tls_context(ssl.get_default_verify_paths().cafile or None)
    assert verifying.check_hostname == (verifying.verify_mode is ssl.CERT_REQUIRED)
    with pytest.raises(ValueError, match=r"key_file needs cert_file"):
        tls_context(key_file="k.pem")
    # the servers' own client context underneath (remoting.tls_context.client_context): a
    # file it cannot use is an OSError naming it
    with pytest.raises(OSError, match=r"no-such-ca\.pem"):
        tls_context("/nonexistent/no-such-ca.pem")


async def test_instances_are_shared_only_by_clients_that_sign_alike() -> None:
    """The process's ClientInstance key separates credentials and TLS: clients with other
    credentials (another secret too) or TLS settings get their own connections."""
    ns = "127.0.0.1:1"  # nothing is sent: starting a producer only joins its instance
    made = [
        Producer("pg_key_1", namesrv_addr=ns),
        Producer("pg_key_2", namesrv_addr=ns),
        Producer("pg_key_3", namesrv_addr=ns, access_key=AK, secret_key=SK),
        Producer("pg_key_4", namesrv_addr=ns, access_key=AK, secret_key=SK),
        Producer("pg_key_5", namesrv_addr=ns, access_key=AK, secret_key=SK + "x"),
        Producer("pg_key_6", namesrv_addr=ns, access_key=AK, secret_key=SK, tls=True),
        Producer("pg_key_7", namesrv_addr=ns, access_key=AK, secret_key=SK, tls=True),
        Producer("pg_key_8", namesrv_addr=ns, tls=ssl.create_default_context()),
    ]
    for p in made:
        await p.start()
    try:
        ids = [id(p.instance) for p in made]
        assert ids[0] == ids[1] and ids[2] == ids[3] and ids[5] == ids[6]
        assert len(set(ids)) == 5
        clients = [p.instance.remoting.client for p in made]
        assert clients[0].credentials is None and clients[0].tls is None
        assert clients[2].credentials is not None and clients[2].credentials.secret_key == SK
        assert clients[4].credentials is not None and clients[4].credentials.secret_key != SK
        assert clients[5].tls is unverified_context()
        assert clients[7].tls is made[7].options.tls
    finally:
        for p in made:
            await p.shutdown()
    assert not [k for k in ClientInstance._shared if k[1] == (ns,)]


# ------------------------------------------------------------------ every path, signed

TX_SETS = {"transactionCheckInterval": "500", "transactionTimeOut": "1000"}
BROKER_SETS = {**ADVERTISED_SETS, **TX_SETS}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running(tmp_path, ("broker-a", "broker-b"), BROKER_SETS) as c:
        yield c


@pytest.fixture
async def audited(cluster: Cluster) -> AsyncIterator[tuple[Audit, str]]:
    """Forwarders in front of the name server and each broker; the name server's address."""
    audit = Audit(SK)
    async with forwarding(cluster, audit) as ns:
        yield audit, ns


SIGNED_FAST: PushOptions = {
    "rebalance_interval": 1000,
    "persist_consumer_offset_interval": 500,
    "heartbeat_broker_interval": 1000,
    "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    "access_key": AK,
    "secret_key": SK,
    "security_token": TOKEN,
}


@pytest.mark.slow
async def test_every_request_of_every_client_is_signed(
    cluster: Cluster, audited: tuple[Audit, str]
) -> None:
    """Producer (send, orderly, oneway, batch), TransactionProducer (END_TRANSACTION after a
    send and after a check-back: the answer goes out on the broker's connection),
    PushConsumer (concurrent, with a send-back, and orderly, which locks queues),
    PullConsumer (poll, commit) and an admin api.Remote: every request each sent, to the name
    server and the brokers, carries the AccessKey, the SecurityToken and a Signature the
    broker's rule verifies. The broker's own requests to the clients are not signed."""
    audit, ns = audited
    sec: SecuritySettings = {"access_key": AK, "secret_key": SK, "security_token": TOKEN}
    admin = api.Remote.open(**sec)
    try:
        route = api.parse_route(await admin.invoke(ns, api.get_route(api.AUTO_CREATE_TOPIC)))
        for b in route.broker_datas:
            assert b.master_addr is not None and b.master_addr.startswith(ADVERTISED)
            for topic in ("SecT", "SecOrder"):
                resp = await admin.invoke(b.master_addr, api.create_topic(topic, 2))
                assert resp.code == 0, resp.remark
    finally:
        await admin.close()

    got: list[bytes] = []
    later = {"once": True}

    def concurrent(msgs: list[MessageExt], ctx: object) -> ConsumeStatus:
        if later["once"] and msgs[0].body == b"retry-me":
            later["once"] = False
            return ConsumeStatus.RECONSUME_LATER  # CONSUMER_SEND_MSG_BACK
        got.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    ordered: list[bytes] = []

    def orderly(msgs: list[MessageExt], ctx: object) -> ConsumeOrderlyStatus:
        ordered.extend(m.body for m in msgs)
        return ConsumeOrderlyStatus.SUCCESS

    push = PushConsumer("cg_sec", namesrv_addr=ns, **SIGNED_FAST)
    push.subscribe("SecT", "*")
    push.register_message_listener(concurrent)
    push_o = PushConsumer("cg_sec_o", namesrv_addr=ns, **SIGNED_FAST)
    push_o.subscribe("SecOrder", "*")
    push_o.register_message_listener(orderly, orderly=True)
    async with push, push_o:
        async with Producer("pg_sec", namesrv_addr=ns, **sec) as p:
            await p.send(Message("SecT", b"one"))
            await p.send(Message("SecT", b"retry-me"))
            await p.send_oneway(Message("SecT", b"oneway"))
            await p.send_batch([Message("SecT", b"b1"), Message("SecT", b"b2")])
            await p.send_orderly(Message("SecOrder", b"o1"), "k")
            await p.send_orderly(Message("SecOrder", b"o2"), "k")
        async with TransactionProducer("pg_sec_tx", Commit(), namesrv_addr=ns, **sec) as tx:
            await tx.send_message_in_transaction(Message("SecT", b"tx-now"))
            await tx.send_message_in_transaction(Message("SecT", b"tx-checked", tags="later"))
            want = {b"one", b"retry-me", b"oneway", b"b1", b"b2", b"tx-now", b"tx-checked"}
            await wait_until(lambda: want <= set(got), 60)
        await wait_until(lambda: ordered == [b"o1", b"o2"], 30)

    pull = PullConsumer("cg_sec_pull", namesrv_addr=ns, auto_commit=False, **sec,
                        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
    pull.subscribe("SecOrder", "*")
    async with pull:
        polled: list[bytes] = []
        while len(polled) < 2:
            polled += [m.body for m in await pull.poll(timeout=1.0)]
        await pull.commit()

    seen = audit.codes()
    expected = {
        C.GET_ROUTEINFO_BY_TOPIC, C.UPDATE_AND_CREATE_TOPIC, C.SEND_MESSAGE_V2,
        C.SEND_BATCH_MESSAGE, C.HEART_BEAT, C.UNREGISTER_CLIENT, C.END_TRANSACTION,
        C.CONSUMER_SEND_MSG_BACK, C.PULL_MESSAGE, C.LOCK_BATCH_MQ, C.QUERY_CONSUMER_OFFSET,
        C.UPDATE_CONSUMER_OFFSET, C.GET_CONSUMER_LIST_BY_GROUP,
    }  # fmt: skip
    assert expected <= seen, sorted(expected - seen)
    assert C.CHECK_TRANSACTION_STATE in audit.server_requests  # the check-back happened
    assert audit.unsigned() == [], audit.unsigned()[:5]
    assert {(s.access_key, s.token) for s in audit.requests} == {(AK, TOKEN)}
    assert any(s.oneway and s.code == C.END_TRANSACTION for s in audit.requests)


async def test_the_audit_sees_an_unsigned_client(
    cluster: Cluster, audited: tuple[Audit, str]
) -> None:
    """The check above can fail: a client without credentials, or with another secret, is
    seen unsigned."""
    audit, ns = audited
    async with Producer("pg_plain", namesrv_addr=ns) as p:
        await p.send(Message("PlainT", b"x"))
    assert audit.unsigned() and all(s.access_key is None for s in audit.unsigned())
    audit.requests.clear()
    async with Producer("pg_other", namesrv_addr=ns, access_key=AK, secret_key="other-secret") as p:
        await p.send(Message("PlainT", b"y"))
    assert audit.requests and audit.unsigned() == audit.requests


# ------------------------------------------------------------------ secrets stay secret


@pytest.fixture
def plain(tmp_path: Path) -> Iterator[Cluster]:
    with running(tmp_path, ("broker-a",)) as c:
        yield c


@pytest.fixture
def stdlib_logging() -> Iterator[None]:
    """The SDK's log calls go to the standard ``logging`` module, as in a program that did not
    configure structlog (remoting/log.py), whatever an earlier test of this worker configured;
    that configuration is put back afterwards."""
    before = structlog.get_config()
    structlog.reset_defaults()
    try:
        yield
    finally:
        structlog.configure(**before)


async def test_the_secret_is_in_no_repr_log_or_error(
    plain: Cluster, caplog: pytest.LogCaptureFixture, stdlib_logging: None
) -> None:
    """A signed producer and consumer at DEBUG, and failures (an unreachable name server, a
    refusal): neither the secret nor the token in any log record, repr or error message."""
    sec: SecuritySettings = {"access_key": AK, "secret_key": SK, "security_token": TOKEN}
    texts: list[str] = []
    caplog.set_level(logging.DEBUG)
    producer = Producer("pg_quiet", namesrv_addr=plain.namesrv_addr, **sec)
    consumer = PullConsumer("cg_quiet", namesrv_addr=plain.namesrv_addr, **sec)
    consumer.subscribe("QuietT", "*")
    async with producer, consumer:
        await producer.send(Message("QuietT", b"z"))
        inst = producer.instance
        client = inst.remoting.client
        shown = [producer, producer.options, inst, inst.remoting, client, inst.security]
        shown += [client.credentials, consumer, consumer.options]
        texts += [repr(obj) for obj in shown] + [str(obj) for obj in shown]
        with pytest.raises(MQClientError) as refused:  # the broker refuses a system topic
            await producer.send(Message("SCHEDULE_TOPIC_XXXX", b"no"))
        texts.append(str(refused.value))
    lost = Producer("pg_lost", namesrv_addr="127.0.0.1:1", **sec)
    async with lost:
        with pytest.raises(MQClientError) as unreachable:
            await lost.send(Message("QuietT", b"no"))
        texts.append(str(unreachable.value))
    texts += [r.getMessage() + repr(r.__dict__) for r in caplog.records]
    assert len(caplog.records) > 5  # DEBUG was on: the check read something
    leaks = [t for t in texts if SK in t or TOKEN in t]
    assert leaks == []
    assert any(AK in t for t in texts)  # the access key names the account: it may show


@pytest.mark.parametrize("cls", [sync.Producer, sync.PullConsumer])
def test_sync_facades_pass_the_keywords_down(cls: type) -> None:
    client = build(cls, access_key=AK, secret_key=SK, tls=True)
    inner = getattr(client, "_producer", None) or getattr(client, "_c", None)
    assert inner is not None
    assert Security.of(inner.options) == Security.from_keywords(AK, SK, None, True)


def test_the_instance_key_holds_no_readable_secret() -> None:
    """The key compares the secret (two secrets, two instances) but prints it nowhere."""
    sec = Security.from_keywords(AK, SK, TOKEN, None)
    assert SK not in repr(sec.key()) and TOKEN not in repr(sec.key())
    assert SK not in repr(sec) and TOKEN not in repr(sec)
    assert sec.key() != Security.from_keywords(AK, SK + "x", TOKEN, None).key()
