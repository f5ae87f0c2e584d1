"""SQL92 filtering served by a real broker process (issue 33; features.md 3.1): pulls that
carry the expression (ali-ons) and pulls of a group that registered it with its heartbeats
(Java) get exactly the matching messages; the refusals 1 / 23 / 27; CHECK_CLIENT_CONFIG;
non-matching messages skipped with nextBeginOffset advanced; held pulls; filterSupportRetry."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq.broker.config import BrokerConfig
from aiorocketmq.broker.server import Broker
from aiorocketmq.client.core import api
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.config import ServerConfig
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.heartbeat import ConsumerData, SubscriptionData
from aiorocketmq.remoting.protocol.message import decode_records
from tests.broker.poison import store_config
from tests.broker.sql92_wire import (
    EXPECTED,
    MATRIX,
    bodies,
    check_client_config,
    send_matrix,
    sql_heartbeat,
    sql_pull,
)
from tests.broker.wire import create_topic, max_offset, send_v2
from tests.cluster import BrokerProc, Cluster

ON = {"enablePropertyFilter": "true"}


@pytest.fixture
async def broker(cluster: Cluster, client: RemotingClient) -> BrokerProc:
    b = cluster.add_broker("broker-a", sets=ON)
    assert (await client.invoke(b.addr, create_topic("SqlT", 2))).code == 0
    return b


async def test_header_and_heartbeat_subscriptions_get_exactly_the_matching_messages(
    broker: BrokerProc, client: RemotingClient
) -> None:
    """Each expression of the matrix, carried by the pull (ali-ons) and registered by a
    group's heartbeat (a Java push consumer, no subscription in its pulls): the broker serves
    exactly what 4.9.8 evaluates true, none of the rest (the Java client never re-filters)."""
    addr = broker.addr
    await send_matrix(client, addr, "SqlT")
    for i, (expression, expected) in enumerate(EXPECTED.items()):
        carried = await client.invoke(addr, sql_pull(f"g{i}", "SqlT", 0, 0, expression))
        group = f"hb{i}"
        beat = sql_heartbeat(f"127.0.0.1@{i}", group, "SqlT", expression, 1000 + i)
        assert (await client.invoke(addr, beat)).code == 0
        registered = await client.invoke(
            addr, sql_pull(group, "SqlT", 0, 0, None, sys_flag=0, sub_version=1000 + i)
        )
        for resp in (carried, registered):
            assert bodies(resp) == expected, (expression, resp.code, resp.remark)
            if expected:
                assert resp.code == R.SUCCESS
            else:  # nothing matched: retry at once, past what was read
                assert (resp.code, resp.remark) == (R.PULL_RETRY_IMMEDIATELY, "NO_MATCHED_MESSAGE")
            assert resp.ext_fields["nextBeginOffset"] == str(len(MATRIX))


async def test_nothing_matched_advances_within_the_scan_bound(
    broker: BrokerProc, client: RemotingClient
) -> None:
    """DefaultMessageStore.getMessage reads at most max(16000, maxMsgNums * 20) bytes of
    ConsumeQueue per pull (800 units for 32): a backlog of 1,000 non-matching messages then
    one match takes two answers -- PULL_RETRY_IMMEDIATELY at offset 800, then the match."""
    addr = broker.addr
    for _ in range(1000 // 50):
        no = [send_v2("SqlT", b"no", queue_id=1, props={"a": "1"}) for _ in range(50)]
        sent = await asyncio.gather(*(client.invoke(addr, cmd) for cmd in no))
        assert all(r.code == 0 for r in sent)
    await client.invoke(addr, send_v2("SqlT", b"yes", queue_id=1, props={"a": "9"}))
    first = await client.invoke(addr, sql_pull("g", "SqlT", 1, 0, "a > 5"))
    assert (first.code, first.ext_fields["nextBeginOffset"]) == (R.PULL_RETRY_IMMEDIATELY, "800")
    second = await client.invoke(addr, sql_pull("g", "SqlT", 1, 800, "a > 5"))
    assert second.code == R.SUCCESS and bodies(second) == {"yes"}
    assert second.ext_fields["nextBeginOffset"] == "1001"


async def test_refusals(broker: BrokerProc, client: RemotingClient) -> None:
    """PullMessageProcessor's answers: an empty or unparsable expression in the pull -> 23
    (ours: 4.9.8 serves every message for an unparsable one, docs/compatibility.md); a group
    whose heartbeat's expression did not compile has no filter data -> 27; a stale one -> 25
    as for tags. CHECK_CLIENT_CONFIG: 0 for tags and for a valid expression, 23 with the
    parser's message for a bad one."""
    addr = broker.addr
    empty = await client.invoke(addr, sql_pull("g", "SqlT", 0, 0, None))
    assert (empty.code, empty.remark) == (
        R.SUBSCRIPTION_PARSE_FAILED,
        "parse the consumer's subscription failed",
    )
    bad = await client.invoke(addr, sql_pull("g", "SqlT", 0, 0, "a >> 5"))
    assert bad.code == R.SUBSCRIPTION_PARSE_FAILED
    assert str(bad.remark).startswith("parse the consumer's subscription failed: ")
    beat = sql_heartbeat("127.0.0.1@1", "bad_group", "SqlT", "a >> 5", 100)
    assert (await client.invoke(addr, beat)).code == 0
    missing = await client.invoke(
        addr, sql_pull("bad_group", "SqlT", 0, 0, None, sys_flag=0, sub_version=100)
    )
    assert (missing.code, missing.remark) == (
        R.FILTER_DATA_NOT_EXIST,
        "The broker's consumer filter data is not exist!Your expression may be wrong!",
    )
    tag_ok = await client.invoke(addr, check_client_config("g", "SqlT", "TagA", "TAG"))
    sql_ok = await client.invoke(addr, check_client_config("g", "SqlT", "a BETWEEN 1 AND 3"))
    assert (tag_ok.code, sql_ok.code) == (R.SUCCESS, R.SUCCESS)
    refused = await client.invoke(addr, check_client_config("g", "SqlT", "a >> 5"))
    assert refused.code == R.SUBSCRIPTION_PARSE_FAILED and refused.remark
    assert refused.remark == str(bad.remark).removeprefix(
        "parse the consumer's subscription failed: "
    )


async def test_property_filter_off_refuses_every_sql92_subscription(
    cluster: Cluster, client: RemotingClient
) -> None:
    """enablePropertyFilter=false (4.9.8's default): a SQL92 pull, carried or registered, and
    CHECK_CLIENT_CONFIG are answered SYSTEM_ERROR with 4.9.8's remark; tags still work."""
    b = cluster.add_broker("broker-a")
    assert (await client.invoke(b.addr, create_topic("SqlT", 1))).code == 0
    remark = "The broker does not support consumer to filter message by SQL92"
    carried = await client.invoke(b.addr, sql_pull("g", "SqlT", 0, 0, "a > 5"))
    assert (await client.invoke(b.addr, sql_heartbeat("c@1", "hb", "SqlT", "a > 5", 7))).code == 0
    registered = await client.invoke(
        b.addr, sql_pull("hb", "SqlT", 0, 0, None, sys_flag=0, sub_version=7)
    )
    checked = await client.invoke(b.addr, check_client_config("g", "SqlT", "a > 5"))
    for resp in (carried, registered, checked):
        assert (resp.code, resp.remark) == (R.SYSTEM_ERROR, remark)
    tag_ok = await client.invoke(b.addr, check_client_config("g", "SqlT", "*", "TAG"))
    assert tag_ok.code == R.SUCCESS


async def test_held_pull_waits_past_messages_it_does_not_match(
    broker: BrokerProc, client: RemotingClient
) -> None:
    """A held SQL92 pull is not answered with nothing when a message it does not match
    arrives: it is answered with the next one it matches, past the other; and at its
    deadline, with nothing matched, PULL_NOT_FOUND past what it skipped."""
    addr = broker.addr
    held = asyncio.ensure_future(
        client.invoke(addr, sql_pull("g", "SqlT", 1, 0, "a > 5", sys_flag=6, suspend_ms=15_000), 30)
    )
    await asyncio.sleep(0.2)
    await client.invoke(addr, send_v2("SqlT", b"no", queue_id=1, props={"a": "1"}))
    while await max_offset(client, addr, "SqlT", 1) < 1:  # dispatched: the pull was woken
        pass
    await asyncio.sleep(0.2)  # ... and has looked at it
    assert not held.done(), "answered for a message it does not match"
    await client.invoke(addr, send_v2("SqlT", b"yes", queue_id=1, props={"a": "9"}))
    resp = await held
    assert resp.code == R.SUCCESS and [m.body for m in decode_records(resp.body)] == [b"yes"]
    assert resp.ext_fields["nextBeginOffset"] == "2"
    quiet = asyncio.ensure_future(
        client.invoke(addr, sql_pull("g", "SqlT", 1, 2, "a > 5", sys_flag=6, suspend_ms=1500), 10)
    )
    await asyncio.sleep(0.2)
    await client.invoke(addr, send_v2("SqlT", b"no", queue_id=1, props={"a": "2"}))
    resp = await quiet
    assert (resp.code, resp.ext_fields["nextBeginOffset"]) == (R.PULL_NOT_FOUND, "3")


@pytest.mark.parametrize("support_retry", [True, False])
async def test_filter_support_retry(
    cluster: Cluster, client: RemotingClient, support_retry: bool
) -> None:
    """filterSupportRetry (ExpressionForRetryMessageFilter): a %RETRY%<group> message is
    evaluated with the group's filter of its RETRY_TOPIC; off (the default), every retry
    passes. A retry of a topic the group does not filter passes either way."""
    sets = {**ON, "filterSupportRetry": str(support_retry).lower()}
    addr, retry = cluster.add_broker("broker-a", sets=sets).addr, "%RETRY%rg"
    assert (await client.invoke(addr, create_topic("SqlT", 1))).code == 0
    subs = [  # a Java push consumer's: its topic, and the retry topic it adds ("*")
        SubscriptionData.build("SqlT", "a > 5", "SQL92", 10),
        SubscriptionData.build(retry, "*", "TAG", 10),
    ]
    beat = api.heartbeat("c@1", consumers=[ConsumerData(group_name="rg", subscriptions=subs)])
    assert (await client.invoke(addr, beat)).code == 0  # the retry topic exists once answered
    for body, a, real in (("hit", "9", "SqlT"), ("miss", "1", "SqlT"), ("other", "1", "Else")):
        props = {"a": a, "RETRY_TOPIC": real}
        sent = await client.invoke(addr, send_v2(retry, body.encode(), queue_id=0, props=props))
        assert sent.code == 0, sent.remark
    resp = await client.invoke(addr, sql_pull("rg", retry, 0, 0, None, sys_flag=0, sub_version=10))
    assert bodies(resp) == ({"hit", "other"} if support_retry else {"hit", "miss", "other"})


def filters_file(broker: BrokerProc) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((broker.store / "config" / "consumerFilter.json").read_text())
    return data


async def test_filters_persist_across_restarts(cluster: Cluster, client: RemotingClient) -> None:
    """consumerFilter.json (ConsumerFilterManager): Apache's file loads, every filter in it
    taken as dead since 30 s before, and still serves pulls (a heartbeat of an older version
    does not replace it); ours is written in Apache's shape, a group's filter dead once its
    last client left; one dead for filterDataCleanTimeSpan is dropped at the next save."""
    b = cluster.add_broker("broker-a", sets=ON)
    assert (await client.invoke(b.addr, create_topic("SqlT", 1))).code == 0
    await send_matrix(client, b.addr, "SqlT")
    assert cluster.stop_broker("broker-a") == 0
    born = int(time.time() * 1000) - 3_600_000
    apache = {"filterDataByTopic": {"SqlT": {"topic": "SqlT", "groupFilterData": {"pg": {
        "consumerGroup": "pg", "topic": "SqlT", "expression": "a > 5", "expressionType": "SQL92",
        "bornTime": born, "deadTime": 0, "dead": False, "clientVersion": 77,
        "bloomFilterData": {"bitNum": 64, "bitPos": [3, 17, 41]}}}}}}  # fmt: skip
    (b.store / "config" / "consumerFilter.json").write_text(json.dumps(apache))

    started = int(time.time() * 1000)
    cluster.start_broker("broker-a")
    async with RemotingClient() as cli:
        older = sql_heartbeat("c@1", "pg", "SqlT", "a < 0", 50)  # older: the file's filter stays
        assert (await cli.invoke(b.addr, older)).code == 0
        pull = sql_pull("pg", "SqlT", 0, 0, None, sys_flag=0, sub_version=50)
        assert bodies(await cli.invoke(b.addr, pull)) == EXPECTED["a > 5"]
    assert cluster.stop_broker("broker-a") == 0
    loaded = filters_file(b)["filterDataByTopic"]["SqlT"]["groupFilterData"]["pg"]
    assert loaded["dead"] and started - 31_000 <= loaded["deadTime"] <= started
    assert (loaded["bornTime"], loaded["clientVersion"], loaded["expression"]) == (
        born,
        77,
        "a > 5",
    )

    cluster.start_broker("broker-a")
    async with RemotingClient() as cli:
        newer = sql_heartbeat("c@1", "pg", "SqlT", "b = 'x'", 90)
        assert (await cli.invoke(b.addr, newer)).code == 0
        pull = sql_pull("pg", "SqlT", 0, 0, None, sys_flag=0, sub_version=90)
        assert bodies(await cli.invoke(b.addr, pull)) == {"m1", "m3", "m5"}
    left = int(time.time() * 1000)
    assert cluster.stop_broker("broker-a") == 0
    ours = filters_file(b)["filterDataByTopic"]["SqlT"]["groupFilterData"]["pg"]
    assert {k: ours[k] for k in ("consumerGroup", "topic", "expression", "expressionType")} == {
        "consumerGroup": "pg", "topic": "SqlT", "expression": "b = 'x'", "expressionType": "SQL92"
    }  # fmt: skip
    assert ours["clientVersion"] == 90 and ours["bornTime"] > born
    assert ours["dead"] and ours["deadTime"] >= left - 1000

    b.sets["filterDataCleanTimeSpan"] = "0"  # dead: dropped at the next save
    cluster.start_broker("broker-a")
    assert cluster.stop_broker("broker-a") == 0
    assert filters_file(b) == {"filterDataByTopic": {}}


async def test_filter_data_older_than_the_pull_is_not_latest(tmp_path: Path) -> None:
    """PullMessageProcessor: registered filter data whose clientVersion is below the pull's
    subVersion -> 28 FILTER_DATA_NOT_LATEST. Heartbeats keep the two together (each carries
    both); the broker's own filter table is set back here, on an in-process broker, to reach
    the state a 4.9.8 broker reaches when they race."""
    local = ServerConfig(listen_port=0, bind_address="127.0.0.1")
    config = BrokerConfig(broker_name="broker-a", broker_ip1="127.0.0.1", metrics_port=-1,
                          enable_property_filter=True)  # fmt: skip
    async with (
        Broker(config, store_config(tmp_path), local) as broker,
        RemotingClient() as cli,
    ):
        addr = f"127.0.0.1:{broker.port}"
        assert (await cli.invoke(addr, create_topic("SqlT", 1))).code == 0
        assert (await cli.invoke(addr, sql_heartbeat("c@1", "g", "SqlT", "a > 5", 50))).code == 0
        data = broker.consumers.filters.get("SqlT", "g")
        assert data is not None and data.client_version == 50
        data.client_version = 40
        stale = await cli.invoke(
            addr, sql_pull("g", "SqlT", 0, 0, None, sys_flag=0, sub_version=50)
        )
        assert (stale.code, stale.remark) == (
            R.FILTER_DATA_NOT_LATEST,
            "the consumer's consumer filter data not latest",
        )
        fine = await cli.invoke(addr, sql_pull("g", "SqlT", 0, 0, None, sys_flag=0, sub_version=40))
        assert fine.code == R.PULL_NOT_FOUND


HOSTILE = {
    "1 MiB of text": "a = '" + "x" * (1 << 20) + "'",
    "deep nesting": "(" * 5000 + "a > 1" + ")" * 5000,
    "a huge IN list": "a IN (" + ",".join(["''"] * 5000) + ")",
    "many terms": " OR ".join(f"a={i}" for i in range(1000)),
    "a huge IN list past the length bound": "a IN (" + ", ".join(map(repr, range(10**5))) + ")",
}


async def test_hostile_expressions_are_refused_and_others_stay_served(
    broker: BrokerProc, client: RemotingClient
) -> None:
    """A hostile expression -- deep nesting, a huge IN list, 1 MiB of text -- is refused with
    23 and a remark saying what was too much (in a pull and in CHECK_CLIENT_CONFIG), is never
    registered from a heartbeat (27), and another consumer's SQL92 pulls are answered
    meanwhile, exactly."""
    addr = broker.addr
    await send_matrix(client, addr, "SqlT")
    async with RemotingClient() as other:

        async def bystander() -> None:
            for _ in range(20):
                resp = await other.invoke(addr, sql_pull("ok", "SqlT", 0, 0, "a > 5"), 10)
                assert bodies(resp) == EXPECTED["a > 5"]

        watching = asyncio.ensure_future(bystander())
        for i, (what, expression) in enumerate(HOSTILE.items()):
            pulled = await client.invoke(addr, sql_pull("h", "SqlT", 0, 0, expression), 30)
            checked = await client.invoke(addr, check_client_config("h", "SqlT", expression), 30)
            assert pulled.code == checked.code == R.SUBSCRIPTION_PARSE_FAILED, what
            assert checked.remark and len(checked.remark) < 1000, (what, checked.remark)
            assert str(pulled.remark).endswith(checked.remark), what
            beat = sql_heartbeat(f"h@{i}", f"hb{i}", "SqlT", expression, 10)
            assert (await client.invoke(addr, beat, 30)).code == 0, what
            pull = sql_pull(f"hb{i}", "SqlT", 0, 0, None, sys_flag=0, sub_version=10)
            assert (await client.invoke(addr, pull)).code == R.FILTER_DATA_NOT_EXIST, what
        await watching
