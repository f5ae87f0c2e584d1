"""Any name a client sends (issue 12 item 3): names that cannot be encoded as UTF-8 are
refused at the edge with a clear error, and nothing a client sends can make a later write
of shared state fail. One HEART_BEAT with group "\\ud800" made topics.json,
subscriptionGroup.json and consumerOffset.json unwritable, broke registration (the name
server evicted the broker) and lost offsets at SIGTERM. Property-tested against a real
broker with arbitrary names in every place a name goes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import RequestCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import encode_properties
from tests.broker.test_hostile import ask, json_frame
from tests.broker.wire import create_topic, route, send_v2
from tests.cluster import BrokerProc, Cluster

# any code point; half the names hold a lone surrogate (hypothesis rarely makes one itself)
ANY = st.text(alphabet=st.characters(blacklist_categories=()), max_size=6)
LONE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
NAMES = st.one_of(ANY.filter(bool), st.tuples(ANY, LONE, ANY).map(lambda parts: "".join(parts)))
PLACES = [
    "heartbeat group", "heartbeat client", "heartbeat topic", "heartbeat expression",
    "offset group", "offset topic", "send topic", "send producer group", "send keys",
    "send tags", "send property key", "send property value", "group config",
]  # fmt: skip


def _heartbeat(group: str, client: str, topic: str, expression: str) -> bytes:
    sub = {
        "topic": topic,
        "subString": expression,
        "tagsSet": [],
        "codeSet": [],
        "subVersion": 1,
        "expressionType": "TAG",
        "classFilterMode": False,
    }
    consumer = {
        "groupName": group,
        "consumeType": "CONSUME_PASSIVELY",
        "messageModel": "CLUSTERING",
        "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
        "subscriptionDataSet": [sub],
        "unitMode": False,
    }
    data = {"clientID": client, "producerDataSet": [], "consumerDataSet": [consumer]}
    return json.dumps(data, ensure_ascii=True).encode()  # fmt: skip


def request_with(place: str, name: str) -> bytes:
    """The raw frame of a request carrying ``name`` at ``place`` (escaped as any JSON peer
    may escape it)."""
    kind, _, what = place.partition(" ")
    if kind == "heartbeat":
        parts = {"group": "g", "client": "c@1", "topic": "Names", "expression": "*"}
        parts[what] = name
        return json_frame(RequestCode.HEART_BEAT, {}, _heartbeat(**parts))
    if kind == "offset":
        ext = {"consumerGroup": "g", "topic": "Names", "queueId": "0", "commitOffset": "3"}
        ext["consumerGroup" if what == "group" else "topic"] = name
        return json_frame(RequestCode.UPDATE_CONSUMER_OFFSET, ext)
    if kind == "group":
        body = json.dumps({"groupName": name}, ensure_ascii=True).encode()
        return json_frame(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body)
    props = {"KEYS": "k", "TAGS": "t", "p": "v"}
    ext = dict(send_v2("Names", b"x").ext_fields)
    if what == "topic":
        ext["b"] = name
    elif what == "producer group":
        ext["a"] = name
    else:
        prop = {"keys": "KEYS", "tags": "TAGS", "property key": "p"}.get(what, "p")
        if what == "property key":
            props[name] = props.pop("p")
        else:
            props[prop] = name
        ext["i"] = _properties(props)
    return json_frame(RequestCode.SEND_MESSAGE_V2, ext, b"x")


def _properties(props: dict[str, str]) -> str:
    try:
        return encode_properties(props)
    except UnicodeEncodeError:  # our encoder checks; a peer's need not
        return "".join(f"{k}\x01{v}\x02" for k, v in props.items())


@pytest.fixture(scope="module")
def names_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, BrokerProc]]:
    cluster = Cluster(tmp_path_factory.mktemp("names"))
    cluster.start_namesrv()
    try:
        broker = cluster.add_broker(
            "broker-a", flushConsumerOffsetInterval="100", registerNameServerPeriod="1000"
        )
        yield cluster, broker
    finally:
        codes = cluster.stop()
        print(cluster.dump())
    assert codes == {"broker-a": 0, "namesrv": 0}, codes


def failed_writes(broker: BrokerProc) -> list[dict[str, object]]:
    """Error lines (a write of shared state that failed among them) and failed
    registrations."""
    assert broker.proc is not None
    bad = ("register_broker_refused", "register_broker_failed")
    return [e for e in broker.proc.events if e.get("level") == "error" or e.get("event") in bad]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(place=st.sampled_from(PLACES), name=NAMES)
def test_any_name_anywhere_is_answered_and_never_breaks_shared_state(
    names_broker: tuple[Cluster, BrokerProc], place: str, name: str
) -> None:
    """Every request is answered (success, or an error that says why); no later write of
    topics.json, subscriptionGroup.json or consumerOffset.json, no registration with the
    name server, no response fails because of it."""
    _cluster, broker = names_broker
    answer = asyncio.run(ask(broker.port, request_with(place, name)))
    assert answer.opaque == 1
    if answer.code != 0:
        assert answer.remark, (place, name, answer.code)
    asyncio.run(shared_state_writable(broker))
    assert failed_writes(broker) == []


async def shared_state_writable(broker: BrokerProc) -> None:
    """topics.json and subscriptionGroup.json can still be written: a topic and a group are
    updated (each answered only once its file is written)."""
    group = json.dumps({"groupName": "probe"}).encode()
    update = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, group)
    async with RemotingClient() as client:
        perm = 6 if (await client.invoke(broker.addr, create_topic("Probe", 1, perm=4))).code else 4
        assert (await client.invoke(broker.addr, create_topic("Probe", 1, perm=perm))).code == 0
        assert (await client.invoke(broker.addr, update)).code == 0


async def test_state_written_and_offsets_kept_after_hostile_names(
    names_broker: tuple[Cluster, BrokerProc],
) -> None:
    """After every hostile name above: the broker still registers (its topics route),
    persists, stops with exit 0, and an offset committed before the stop is there after a
    restart (42 came back as 5 before)."""
    cluster, broker = names_broker
    async with RemotingClient() as client:
        assert (await client.invoke(broker.addr, create_topic("Canary", 2))).code == 0
        assert (await route(client, cluster.namesrv_addr, "Canary")).code == 0
        for frame in (
            request_with("heartbeat group", "\ud800"),
            request_with("offset group", "\udfff"),
        ):
            assert (await ask(broker.port, frame)).code != 0
        ext = {"consumerGroup": "cg", "topic": "Canary", "queueId": "1", "commitOffset": "42"}
        req = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, ext)
        assert (await client.invoke(broker.addr, req)).code == 0
    await shared_state_writable(broker)  # a group exists even when this test runs alone
    assert cluster.stop_broker("broker-a") == 0
    for name in ("topics.json", "subscriptionGroup.json", "consumerOffset.json"):
        json.loads((Path(broker.store) / "config" / name).read_text(encoding="utf-8"))
    cluster.start_broker("broker-a")
    async with RemotingClient() as client:
        ext = {"consumerGroup": "cg", "topic": "Canary", "queueId": "1"}
        req = RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, ext)
        assert (await client.invoke(broker.addr, req)).ext_fields["offset"] == "42"
    assert failed_writes(broker) == []
