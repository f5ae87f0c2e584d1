"""RegisterBrokerBody and route bodies from hostile peers (protocol.md 6.1, 6.2, 6.7; the
zlib-bomb and unencodable-string issues): decoders raise ValueError and nothing else, refuse
names that are blank, absurdly long or not valid UTF-8, inflate under a hard limit, and parse
large bodies in bounded steps. Valid bodies, Java's forms included, decode as before."""

from __future__ import annotations

import contextlib
import json
import struct
import zlib
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from aiorocketmq.remoting.protocol import text
from aiorocketmq.remoting.protocol.register import (
    TOPIC_NAME_MAX,
    DataVersion,
    RegisterBrokerBody,
    TopicConfigWrapper,
    unregistrable,
)
from aiorocketmq.remoting.protocol.route import (
    BrokerData,
    ClusterInfo,
    QueueData,
    TopicRouteData,
    decode_kv_table,
    decode_topic_list,
    encode_kv_table,
    encode_topic_list,
)
from aiorocketmq.remoting.protocol.topic import TopicConfig

# any code point, lone surrogates included (hypothesis leaves them out of text() by default)
ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=12)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=12,
)


def ascii_json(obj: Any) -> bytes:
    """What a peer may put on the wire: ASCII JSON, ``\\uXXXX`` escapes for everything else
    (so a lone surrogate arrives as ``"\\ud800"``)."""
    return json.dumps(obj, ensure_ascii=True).encode()


def body_json(names: list[str], attrs: dict[str, str] | None = None) -> dict[str, Any]:
    table = {n: TopicConfig(topic_name=n, attributes=attrs or {}).to_json() for n in names}
    return {"filterServerList": [], "topicConfigSerializeWrapper": {
        "dataVersion": {"counter": 3, "timestamp": 9}, "topicConfigTable": table}}  # fmt: skip


def acceptable(name: str) -> bool:
    """The rule: a topic name is not blank, at most TOPIC_NAME_MAX long, valid UTF-8."""
    return bool(name.strip()) and len(name) <= TOPIC_NAME_MAX and not text.unencodable(name)


def routable(name: str) -> bool:
    """A valid UTF-8 name the name server still skips: blank or over TOPIC_NAME_MAX."""
    return bool(name.strip()) and len(name) <= TOPIC_NAME_MAX


def compressed(version: DataVersion, topics: list[TopicConfig], servers: list[str]) -> bytes:
    """Java's RegisterBrokerBody.encode(true): int32-length-prefixed parts in a zlib stream."""

    def part(data: bytes) -> bytes:
        return struct.pack(">i", len(data)) + data

    lines = [
        f"{t.topic_name} {t.read_queue_nums} {t.write_queue_nums} {t.perm} "
        f"{t.topic_filter_type} {json.dumps(t.attributes, separators=(',', ':'))}".encode()
        for t in topics
    ]
    raw = part(json.dumps(version.to_json()).encode()) + struct.pack(">i", len(lines))
    raw += b"".join(part(line) for line in lines) + part(json.dumps(servers).encode())
    return zlib.compress(raw)


def zlib_bomb(mib: int) -> bytes:
    """A valid zlib stream of ``mib`` MiB of zeros in ~1 KiB per MiB, built in milliseconds:
    after a full flush every further MiB of zeros compresses to the same bytes."""
    c = zlib.compressobj(9)
    zeros = bytes(1 << 20)
    first = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    end = c.flush(zlib.Z_FINISH)[:-4]  # adler32 of n zeros: (n % 65521) << 16 | 1
    return first + again * (mib - 1) + end + struct.pack(">I", ((mib << 20) % 65521) << 16 | 1)


@settings(max_examples=300)
@given(st.lists(ANY_TEXT, min_size=1, max_size=4), st.dictionaries(ANY_TEXT, ANY_TEXT, max_size=2))
def test_names_round_trip_or_are_refused(names: list[str], attrs: dict[str, str]) -> None:
    """Unencodable strings issue: any topic name or attribute, lone surrogates included, either
    round-trips or is refused with ValueError -- never another error, never stored; a blank or
    over-long name is skipped alone (issue 29: no poison pill)."""
    data = ascii_json(body_json(names, attrs))
    if any(text.unencodable(s) for s in [*names, *attrs, *attrs.values()]):
        with pytest.raises(ValueError, match=r"not valid UTF-8"):
            RegisterBrokerBody.decode(data)
        return
    body = RegisterBrokerBody.decode(data)
    table = body.topic_config_wrapper.topic_config_table
    assert {n: (t.topic_name, t.attributes) for n, t in table.items()} == {
        n: (n, attrs) for n in names if routable(n)
    }
    assert set(body.skipped) == {n for n in names if not routable(n)}
    assert body.topic_config_wrapper.data_version == DataVersion(3, 9)


@settings(max_examples=300)
@given(st.binary(max_size=200) | JSON_VALUES.map(ascii_json), st.booleans())
def test_any_bytes_raise_only_value_error(data: bytes, is_compressed: bool) -> None:
    """Hostile bodies: whatever the bytes, decode succeeds or raises ValueError (the server
    answers SYSTEM_ERROR); never TypeError, KeyError, RecursionError, OverflowError..."""
    for body in (data, zlib.compress(data)) if is_compressed else (data,):
        with contextlib.suppress(ValueError):
            RegisterBrokerBody.decode(body, compressed=is_compressed)


@settings(max_examples=300)
@given(JSON_VALUES, st.sampled_from(["table", "entry", "perm", "version", "servers"]))
def test_junk_in_any_field_raises_only_value_error(junk: Any, where: str) -> None:
    """Hostile bodies: any JSON value in any field of a well-formed body decodes or raises
    ValueError."""
    obj = body_json(["T"])
    wrapper = obj["topicConfigSerializeWrapper"]
    if where == "table":
        wrapper["topicConfigTable"] = junk
    elif where == "entry":
        wrapper["topicConfigTable"]["T"] = junk
    elif where == "perm":
        wrapper["topicConfigTable"]["T"]["perm"] = junk
    elif where == "version":
        wrapper["dataVersion"] = junk
    else:
        obj["filterServerList"] = junk
    with contextlib.suppress(ValueError):
        RegisterBrokerBody.decode(ascii_json(obj))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[" * 100_000, "not a JSON object"),
        (b'{"a":' * 100_000, "nested more than"),
        (ascii_json(body_json(["T"])).replace(b'"perm": 6', b'"perm": ' + b"9" * 5000), "limit"),
        (b'{"filterServerList":"' + b"x" * 70_000 + b'"}', "longer than 65536"),
        (b'{"a":1,' + b" " * 70_000 + b'"b":2}', "whitespace"),
        (b'{"a":"\xff"}', "bad JSON"),
    ],
)
def test_hostile_shapes_are_value_errors(body: bytes, message: str) -> None:
    """Hostile bodies: deep nesting, huge values and invalid UTF-8 are each refused with a
    ValueError saying why."""
    with pytest.raises(ValueError, match=message):
        RegisterBrokerBody.decode(body)


def _with(name: str, old: bytes, new: bytes) -> bytes:
    """A body of topics A, ``name`` and Z, ``old`` replaced by ``new`` in ``name``'s config."""
    data = ascii_json(body_json(["A", name, "Z"]))
    at = data.index(b'"' + ascii_json(name)[1:-1] + b'": {')
    end = data.index(b"}", data.index(b"writeQueueNums", at))  # the entry's last field
    return data[:at] + data[at:end].replace(old, new, 1) + data[end:]


@pytest.mark.parametrize(
    ("body", "bad", "reason"),
    [
        (ascii_json(body_json(["A", "", "Z"])), "", "blank"),
        (ascii_json(body_json(["A", "x" * (TOPIC_NAME_MAX + 1), "Z"])), "x" * (TOPIC_NAME_MAX + 1),
         "characters long"),
        (_with("T", b'"perm": 6', b'"perm": 1e999'), "T", "OverflowError"),
        (_with("T", b'"perm": 6', b'"perm": 4294967296'), "T", "Java ints"),
        (_with("%RETRY%g", b'"readQueueNums": 16', b'"readQueueNums": 1099511627776'),
         "%RETRY%g", "Java ints"),
        (_with("T", b'"readQueueNums": 16', b'"readQueueNums": 2147483647'), "T",
         "what a client can carry"),
        (_with("T", b'"writeQueueNums": 16', b'"writeQueueNums": -1'), "T",
         "what a client can carry"),
        (_with("T", b'"perm": 6', b'"perm": NaN'), "T", "NaN"),
        (_with("T", b'"perm": 6', b'"perm": "six"'), "T", "invalid literal"),
        (_with("T", b'"topicName": "T"', b'"name": "T"'), "T", "KeyError"),
        (_with("T", b'"attributes": {}', b'"attributes": [1]'), "T", "AttributeError"),
        (ascii_json(body_json(["A", "Z"])).replace(b'"Z": {', b'"T": 7, "Z": {'), "T",
         "not a JSON object"),
    ],
)  # fmt: skip
def test_one_unroutable_topic_is_skipped_alone(body: bytes, bad: str, reason: str) -> None:
    """Issue 29 (no poison pill): a topic whose name is blank or too long, whose numbers
    Java's int cannot hold, whose queues no client could allocate (over 65,535), or whose
    config is not one is left out of the table and named in
    ``skipped`` with the reason; the topics around it are parsed as usual."""
    decoded = RegisterBrokerBody.decode(body)
    assert list(decoded.topic_config_wrapper.topic_config_table) == ["A", "Z"]
    assert list(decoded.skipped) == [bad]
    assert reason in decoded.skipped[bad]
    assert decoded.topic_config_wrapper.data_version == DataVersion(3, 9)


def test_the_broker_and_name_server_share_one_rule() -> None:
    """``unregistrable``: what the name server skips is what the broker leaves out."""
    fine = TopicConfig(topic_name="T", read_queue_nums=65_535, perm=-(2**31))
    assert unregistrable(fine) is None
    for bad in (
        TopicConfig(topic_name="T", read_queue_nums=65_536),
        TopicConfig(topic_name="T", write_queue_nums=-1),
        TopicConfig(topic_name=" "),
        TopicConfig(topic_name="x" * (TOPIC_NAME_MAX + 1)),
        TopicConfig(topic_name="T", read_queue_nums=2**40),
        TopicConfig(topic_name="T", write_queue_nums=-(2**31) - 1),
        TopicConfig(topic_name="T", perm=2**31),
        TopicConfig(topic_name="T", topic_sys_flag=2**63),
        TopicConfig(topic_name="T\ud800"),
        TopicConfig(topic_name="T", attributes={"k": "\udfff"}),
    ):
        assert unregistrable(bad) is not None, bad
        body = RegisterBrokerBody(
            topic_config_wrapper=TopicConfigWrapper(
                topic_config_table={bad.topic_name: bad, "Z": TopicConfig(topic_name="Z")}
            )
        )
        if text.unencodable(json.dumps(bad.to_json(), ensure_ascii=False)):
            continue  # unencodable text: the JSON form refuses the whole body (above)
        decoded = RegisterBrokerBody.decode(ascii_json(json.loads(body.encode())))
        assert list(decoded.skipped) == [bad.topic_name]


def test_zlib_bomb_is_refused_at_the_limit_and_the_limit_itself_passes() -> None:
    """zlib bomb: a compressed body inflates under a hard limit (the frame size) and is
    refused past it; one that inflates to exactly the limit is still read."""
    with pytest.raises(ValueError, match="inflates past 16777216 bytes"):
        RegisterBrokerBody.decode(zlib_bomb(1024), compressed=True)
    topics = [TopicConfig(topic_name=f"T{i}") for i in range(3)]
    body = compressed(DataVersion(1, 2), topics, [])
    size = len(zlib.decompress(body))
    decoded = RegisterBrokerBody.decode(body, compressed=True, max_inflated=size)
    assert list(decoded.topic_config_wrapper.topic_config_table) == ["T0", "T1", "T2"]
    with pytest.raises(ValueError, match="inflates past"):
        RegisterBrokerBody.decode(body, compressed=True, max_inflated=size - 1)
    with pytest.raises(ValueError, match="truncated"):
        RegisterBrokerBody.decode(body[:-6], compressed=True)


@settings(max_examples=100)
@given(
    st.lists(st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters=" "),
                     min_size=1, max_size=12),
             min_size=1, max_size=4, unique=True),
    st.dictionaries(ANY_TEXT, ANY_TEXT, max_size=2),
)  # fmt: skip
def test_compressed_form_round_trips_or_is_refused(names: list[str], attrs: dict[str, str]) -> None:
    """protocol.md 6.7: the compressed variant (Java's compressedRegister) decodes to the
    same topics; a topic line with an attribute that is not valid UTF-8, or a blank or
    over-long name, is skipped alone (issue 29)."""
    topics = [TopicConfig(topic_name=n, read_queue_nums=3, perm=7, attributes=attrs) for n in names]
    body = compressed(DataVersion(5, 6), topics, ["127.0.0.1:1"])
    bad = any(text.unencodable(s) for kv in attrs.items() for s in kv)
    decoded = RegisterBrokerBody.decode(body, compressed=True)
    kept = {t.topic_name: t for t in topics if not bad and acceptable(t.topic_name)}
    assert decoded.topic_config_wrapper.topic_config_table == kept
    assert len(decoded.skipped) == len(topics) - len(kept)
    assert decoded.topic_config_wrapper.data_version == DataVersion(5, 6)
    assert decoded.filter_server_list == ["127.0.0.1:1"]


def test_large_body_parses_in_many_bounded_steps() -> None:
    """zlib-bomb issue, "never block the loop": 10,000 topics (1.7 MB of JSON) parse in
    thousands of steps -- no C call sees more than 64 KiB -- to the same result as at once."""
    table = {f"T{i:05d}": TopicConfig(topic_name=f"T{i:05d}", attributes={"k": "v"})
             for i in range(10_000)}  # fmt: skip
    wrapper = TopicConfigWrapper(topic_config_table=table, data_version=DataVersion(7, 8))
    body = RegisterBrokerBody(topic_config_wrapper=wrapper, filter_server_list=["a:1"])
    steps = RegisterBrokerBody.parse_steps(body.encode())
    count = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            assert done.value == body
            break
        count += 1
    assert count >= 10_000
    assert RegisterBrokerBody.decode(body.encode()) == body


def test_java_bare_integer_keys_and_5x_fields_are_accepted() -> None:
    """protocol.md 6.1/6.7: fastjson writes Map<Integer, _> with bare keys (5.x static-topic
    mappings in the body, brokerAddrs in a Java namesrv's routes); both still decode."""
    body = (b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,'
            b'"timestamp":2,"stateVersion":0},"topicConfigTable":{"T":{"topicName":"T","perm":6}},'
            b'"topicQueueMappingInfoMap":{"T":{"currIdMap":{0:0,1:1},"bname":"b"}}}}')  # fmt: skip
    decoded = RegisterBrokerBody.decode(body)
    assert list(decoded.topic_config_wrapper.topic_config_table) == ["T"]
    route = TopicRouteData.decode(
        b'{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"b","cluster":"C"}],'
        b'"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":4,"writeQueueNums":4}]}'
    )
    assert route.broker_datas[0].broker_addrs == {0: "127.0.0.1:10911"}


@settings(max_examples=300)
@given(ANY_TEXT, ANY_TEXT, ANY_TEXT, ANY_TEXT)
@example(broker="\ud800", cluster="C", addr="127.0.0.1:1", topic="T")
@example(broker="b", cluster="C", addr="127.0.0.1:1", topic="T\udfff")
def test_route_bodies_round_trip_or_are_refused(broker: str, cluster: str, addr: str,
                                                topic: str) -> None:  # fmt: skip
    """Unencodable strings issue, client side: route, cluster, topic-list and KV bodies with
    any names decode to what was sent, or -- when a name is not valid UTF-8 -- raise
    ValueError."""
    data = BrokerData(cluster=cluster, broker_name=broker, broker_addrs={0: addr})
    queue = QueueData(broker_name=broker, read_queue_nums=1, write_queue_nums=1, perm=6)
    route = TopicRouteData(queue_datas=[queue], broker_datas=[data])
    info = ClusterInfo(broker_addr_table={broker: data}, cluster_addr_table={cluster: [broker]})
    cases = [  # (sent, its names, decode, what it must decode to)
        (route.to_json(), (broker, cluster, addr), TopicRouteData.decode, route),
        ({"brokerAddrTable": {broker: data.to_json()}, "clusterAddrTable": {cluster: [broker]}},
         (broker, cluster, addr), ClusterInfo.decode, info),
        ({"topicList": [topic]}, (topic,), decode_topic_list, [topic]),
        ({"table": {topic: addr}}, (topic, addr), decode_kv_table, {topic: addr}),
    ]  # fmt: skip
    for obj, names, decode, expected in cases:
        if any(text.unencodable(n) for n in names):
            with pytest.raises(ValueError, match="not valid UTF-8"):
                decode(ascii_json(obj))
        else:
            assert decode(ascii_json(obj)) == expected
    if not any(text.unencodable(n) for n in (topic, addr)):  # our own encoders, raw UTF-8
        assert decode_topic_list(encode_topic_list([topic])) == [topic]
        assert decode_kv_table(encode_kv_table({topic: addr})) == {topic: addr}


@settings(max_examples=300)
@given(st.binary(max_size=200) | JSON_VALUES.map(ascii_json))
def test_route_decoders_raise_only_value_error(data: bytes) -> None:
    """Hostile route bodies: every route-body decoder succeeds or raises ValueError."""
    decoders = (TopicRouteData.decode, ClusterInfo.decode, decode_topic_list, decode_kv_table)
    for decode in decoders:
        with contextlib.suppress(ValueError):
            decode(data)
    with pytest.raises(ValueError):
        ClusterInfo.decode(b"[" * 100_000)


def test_encodable_part_leaves_out_only_the_bad_entries() -> None:
    """Unencodable strings issue: one broker whose name cannot be written does not keep the
    cluster table or a route from being encoded for the others."""
    good = BrokerData(cluster="C", broker_name="good", broker_addrs={0: "127.0.0.1:1"})
    bad = BrokerData(cluster="C", broker_name="\ud800", broker_addrs={0: "127.0.0.1:2"})
    clusters = {"C": ["good", "\ud800"], "\udfff": ["good"]}
    info = ClusterInfo(broker_addr_table={"good": good, "\ud800": bad}, cluster_addr_table=clusters)
    with pytest.raises(UnicodeEncodeError):
        info.encode()
    decoded = ClusterInfo.decode(info.encodable_part().encode())
    assert (decoded.broker_addr_table, decoded.cluster_addr_table) == (
        {"good": good},
        {"C": ["good"]},
    )
    queues = [QueueData(broker_name=b.broker_name, read_queue_nums=1, write_queue_nums=1, perm=6)
              for b in (good, bad)]  # fmt: skip
    route = TopicRouteData(queue_datas=queues, broker_datas=[good, bad], order_topic_conf="\ud800")
    decoded_route = TopicRouteData.decode(route.encodable_part().encode())
    assert [b.broker_name for b in decoded_route.broker_datas] == ["good"]
    assert [q.broker_name for q in decoded_route.queue_datas] == ["good"]
    assert decoded_route.order_topic_conf is None


@pytest.mark.parametrize(
    "obj",
    [[], [1], "x", {"counter": "x"}, {"counter": 1e999}, {"timestamp": 2**64}, {"counter": []}],
)
def test_data_version_junk_is_a_value_error(obj: Any) -> None:
    """QUERY_DATA_VERSION and registration bodies: a DataVersion that is not an object of
    Java longs is a ValueError (the handler answers SYSTEM_ERROR, no traceback)."""
    with pytest.raises(ValueError):
        DataVersion.from_json(obj)
