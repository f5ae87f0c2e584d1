"""No poison pill at the name server (issue 29, N1 and build item 3): a REGISTER_BROKER whose
body holds one topic that cannot be routed -- 2**40 queues, as a broker that let
``retryQueueNums=2**40`` through would send, a name over the limit, a config that is not one
-- registers every other topic of that broker and skips that one, counted on /metrics and
named in a warning at most once a minute. Before, the whole body was refused and every
topic of the broker lost its route."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.codes import ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.register import TOPIC_NAME_MAX, DataVersion
from aiorocketmq.remoting.protocol.route import TopicRouteData
from aiorocketmq.remoting.protocol.topic import TopicConfig
from tests.harness import ServerProcess, serving
from tests.namesrv.test_hostile import register_request
from tests.namesrv.test_process import namesrv_args
from tests.protocol.test_register import ascii_json, compressed
from tests.scrape import scrape, value

GOOD = ["GoodT", "%RETRY%normal_g", "Other"]
SKIPPED = "rocketmq_namesrv_register_topics_skipped_total"


@pytest.fixture
def namesrv(tmp_path: Path) -> Iterator[ServerProcess]:
    with serving(namesrv_args(tmp_path)) as proc:
        yield proc


def body(bad: dict[str, Any], counter: int) -> bytes:
    """The JSON body of a broker hosting GOOD (4 queues each) and the configs in ``bad``."""
    table: dict[str, Any] = {
        t: TopicConfig(topic_name=t, read_queue_nums=4, write_queue_nums=4).to_json() for t in GOOD
    }
    table.update(bad)
    wrapper = {"dataVersion": {"counter": counter, "timestamp": 1}, "topicConfigTable": table}
    return ascii_json({"filterServerList": [], "topicConfigSerializeWrapper": wrapper})


async def routed(cli: RemotingClient, addr: str, topic: str) -> tuple[int, list[int]]:
    """GET_ROUTEINFO_BY_TOPIC: the code and the queue counts of each broker's queue data."""
    resp = await cli.invoke(addr, RemotingCommand.request(105, {"topic": topic}))
    if resp.code != ResponseCode.SUCCESS:
        return resp.code, []
    return resp.code, [q.read_queue_nums for q in TopicRouteData.decode(resp.body).queue_datas]


async def test_one_unroutable_topic_is_skipped_and_the_others_are_registered(
    namesrv: ServerProcess,
) -> None:
    """N1 at the name server: a registration with %RETRY%evilg at 2**40 queues (plus a
    1,025-character name and two configs that are not ones) is answered SUCCESS; the three
    good topics have routes, the bad ones none; the skips are counted at each registration
    (4 per registration on /metrics) and the warning naming broker and topics is logged
    once for three registrations."""
    port = namesrv.listening_port()
    addr = f"127.0.0.1:{port}"
    evil = TopicConfig(topic_name="%RETRY%evilg", read_queue_nums=2**40, write_queue_nums=2**40)
    long_name = "L" * (TOPIC_NAME_MAX + 1)
    bad = {
        evil.topic_name: evil.to_json(),
        long_name: TopicConfig(topic_name=long_name).to_json(),
        "NotAConfig": [1, 2],
        "NoName": {"readQueueNums": 4},
    }
    async with RemotingClient() as cli:  # one connection: closing it would evict the broker
        for counter in (1, 2, 3):
            reg = register_request("broker-a", "127.0.0.1:10911", body(bad, counter))
            resp = await cli.invoke(addr, reg)
            assert resp.code == ResponseCode.SUCCESS, resp.remark
        for topic in GOOD:
            assert await routed(cli, addr, topic) == (0, [4]), topic
        for topic in (evil.topic_name, long_name[:200], "NotAConfig", "NoName"):
            assert (await routed(cli, addr, topic))[0] == ResponseCode.TOPIC_NOT_EXIST
        metrics = await scrape(namesrv.metrics_port())
    assert value(metrics, SKIPPED) == 3 * len(bad)
    warnings = [e for e in namesrv.events if e.get("event") == "register_topics_skipped"]
    print(json.dumps(warnings)[:2000])
    assert len(warnings) == 1, "one line a minute per broker, not one per registration"
    (warning,) = warnings
    assert warning["level"] == "warning"
    assert (warning["broker"], warning["addr"], warning["count"]) == (
        "broker-a",
        "127.0.0.1:10911",
        len(bad),
    )
    assert "Java ints" in warning["topics"]["%RETRY%evilg"]
    assert warning["topics"][long_name[:200]].startswith("the topic name is 1025 characters")
    assert set(warning["topics"]) == {"%RETRY%evilg", long_name[:200], "NotAConfig", "NoName"}


async def test_a_bad_line_of_a_compressed_body_is_skipped_alone(namesrv: ServerProcess) -> None:
    """The same for Java's compressed form (``compressedRegister``): one topic line at 2**40
    queues, one that does not parse; the other topics are routed, the bad ones counted."""
    port = namesrv.listening_port()
    addr = f"127.0.0.1:{port}"
    topics = [TopicConfig(topic_name=t, read_queue_nums=4, write_queue_nums=4) for t in GOOD]
    evil = TopicConfig(topic_name="%RETRY%evilg", read_queue_nums=2**40)
    raw = zlib.decompress(compressed(DataVersion(1, 1), [*topics, evil], []))
    # a fifth topic whose line has too few fields: the count goes up by one, the line is junk
    junk = b"Junk 4"
    lines_at = raw.index(b"GoodT") - 8  # int32 count, then int32 length of the first line
    count = int.from_bytes(raw[lines_at : lines_at + 4], "big") + 1
    raw = (
        raw[:lines_at]
        + count.to_bytes(4, "big")
        + len(junk).to_bytes(4, "big")
        + junk
        + raw[lines_at + 4 :]
    )
    data = zlib.compress(raw)
    async with RemotingClient() as cli:
        reg = register_request("broker-c", "127.0.0.1:10921", data, compress=True)
        resp = await cli.invoke(addr, reg)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        for topic in GOOD:
            assert await routed(cli, addr, topic) == (0, [4]), topic
        assert (await routed(cli, addr, "%RETRY%evilg"))[0] == ResponseCode.TOPIC_NOT_EXIST
        metrics = await scrape(namesrv.metrics_port())
    assert value(metrics, SKIPPED) == 2
    (warning,) = [e for e in namesrv.events if e.get("event") == "register_topics_skipped"]
    assert set(warning["topics"]) == {"%RETRY%evilg", "Junk"}


async def test_a_body_malformed_as_a_whole_is_still_refused(namesrv: ServerProcess) -> None:
    """Only one topic is isolated: a body that is not JSON, or whose table is not an object,
    is refused whole as before, and nothing is registered."""
    port = namesrv.listening_port()
    addr = f"127.0.0.1:{port}"
    whole = json.loads(body({}, 1))
    whole["topicConfigSerializeWrapper"]["topicConfigTable"] = ["GoodT"]
    async with RemotingClient() as cli:
        for data in (body({}, 1)[:-1], ascii_json(whole)):
            resp = await cli.invoke(addr, register_request("broker-b", "127.0.0.1:10915", data))
            assert resp.code == ResponseCode.SYSTEM_ERROR, resp.remark
            assert (resp.remark or "").startswith("bad RegisterBrokerBody"), resp.remark
        assert (await routed(cli, addr, "GoodT"))[0] == ResponseCode.TOPIC_NOT_EXIST
