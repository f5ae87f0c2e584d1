"""mqadmin's message commands against the package's cluster: sendMessage (a Producer),
queryMsgById (33; by UNIQ_KEY with -t; tracking 300/203/208/106; -g -d 309), queryMsgByKey
(105 + 12 per broker), queryMsgByUniqueKey (12 with _UNIQUE_KEY_QUERY; -g -d 309),
queryMsgByOffset (one pull) and consumeMessage (pulls, bounded by -c)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from aiorocketmq.client import ConsumeStatus, Message, MessageQueue, Producer
from tests.admin.conftest import mqadmin
from tests.admin.test_group_cmds import Admin, lines, poll, push, run
from tests.client.conftest import create_everywhere
from tests.client.test_push import Collect
from tests.cluster import Cluster
from tests.util import wait_until

TOPIC = "TAdmMsg"


@pytest.fixture(scope="module")
def sent(cluster: Cluster) -> dict[str, Any]:
    """sendMessage's --json for one message with two keys and a tag, sent by mqadmin."""
    result = mqadmin(
        "sendMessage",
        "-n",
        cluster.namesrv_addr,
        "-t",
        TOPIC,
        "-p",
        "hello admin",
        "-k",
        "KAdm1 KAdm2",
        "-c",
        "TagA",
        "--json",
    )
    assert result.code == 0, result.err
    data: dict[str, Any] = result.json
    assert data["sendStatus"] == "SEND_OK" and data["brokerName"] in cluster.brokers
    return data


def test_send_message_to_a_queue(admin: Admin, sent: dict[str, Any]) -> None:
    table = admin("sendMessage", "-t", TOPIC, "-p", "to queue 1", "-b", "broker-b", "-i", "1")
    assert table.code == 0, table.err
    assert lines(table)[0] == ["#Broker", "Name", "#QID", "#Send", "Result", "#MsgId"]
    assert lines(table)[1][:3] == ["broker-b", "1", "SEND_OK"]
    found = admin("queryMsgByUniqueKey", "-t", TOPIC, "-i", lines(table)[1][3], "--json").json
    assert (found[0]["body"], found[0]["queueId"], found[0]["tags"]) == ("to queue 1", 1, None)


def test_query_msg_by_id(admin: Admin, sent: dict[str, Any]) -> None:
    s = sent
    (m,) = admin("queryMsgById", "-i", s["offsetMsgId"], "--json").json
    assert (m["msgId"], m["offsetMsgId"], m["topic"], m["tags"], m["keys"]) == (
        s["msgId"],
        s["offsetMsgId"],
        TOPIC,
        "TagA",
        "KAdm1 KAdm2",
    )
    assert (m["body"], m["bodyEncoding"], m["queueId"], m["queueOffset"]) == (
        "hello admin",
        "text",
        s["queueId"],
        s["queueOffset"],
    )
    assert m["tracks"] == [] and m["tracksError"] is None  # no group consumes the topic yet
    shown = lines(admin("queryMsgById", "-i", s["offsetMsgId"]))
    assert ["OffsetID:", s["offsetMsgId"]] in shown and ["Tags:", "[TagA]"] in shown
    assert ["Message", "Body:", "hello", "admin"] in shown and ["No", "Consumer"] in shown
    # a producer's id (UNIQ_KEY) is no offsetMsgId: with -t it is looked up by unique key
    by_uniq = admin("queryMsgById", "-i", s["msgId"], "-t", TOPIC, "--json").json
    assert by_uniq[0]["offsetMsgId"] == s["offsetMsgId"]
    assert "give -t <topic>" in admin("queryMsgById", "-i", s["msgId"]).err


def test_query_msg_by_key(admin: Admin, sent: dict[str, Any]) -> None:
    s = sent
    for key in ("KAdm1", "KAdm2"):
        keyed = admin("queryMsgByKey", "-t", TOPIC, "-k", key, "--json").json
        assert [(k["msgId"], k["queueOffset"], k["brokerName"]) for k in keyed] == [
            (s["msgId"], s["queueOffset"], s["brokerName"])
        ]
    assert lines(admin("queryMsgByKey", "-t", TOPIC, "-k", "KAdm1")) == [
        ["#Message", "ID", "#QID", "#Offset"],
        [s["msgId"], str(s["queueId"]), str(s["queueOffset"])],
    ]
    stored = admin("queryMsgByKey", "-t", TOPIC, "-k", "KAdm1", "--json").json[0]["storeTimestamp"]
    later = admin("queryMsgByKey", "-t", TOPIC, "-k", "KAdm1", "-b", str(stored + 60_000))
    assert later.code == 1 and "no message with key KAdm1" in later.err
    before = admin("queryMsgByKey", "-t", TOPIC, "-k", "KAdm1", "-e", str(stored - 60_000))
    assert before.code == 1


def test_query_msg_by_unique_key_and_offset(admin: Admin, sent: dict[str, Any]) -> None:
    s = sent
    unique = admin("queryMsgByUniqueKey", "-t", TOPIC, "-i", s["msgId"], "--json").json
    assert [(u["offsetMsgId"], u["body"]) for u in unique] == [(s["offsetMsgId"], "hello admin")]
    assert ["Topic:", TOPIC] in lines(admin("queryMsgByUniqueKey", "-t", TOPIC, "-i", s["msgId"]))
    where = (
        "-t",
        TOPIC,
        "-b",
        s["brokerName"],
        "-i",
        str(s["queueId"]),
        "-o",
        str(s["queueOffset"]),
    )
    at = admin("queryMsgByOffset", *where, "--json")
    assert at.code == 0, at.err
    assert (at.json["msgId"], at.json["body"]) == (s["msgId"], "hello admin")
    assert ["Message", "Body:", "hello", "admin"] in lines(admin("queryMsgByOffset", *where))


def test_query_msg_by_id_resends(admin: Admin) -> None:
    """-s true: the message sent again as stored (the same UNIQ_KEY, a new offsetMsgId)."""
    first = admin("sendMessage", "-t", TOPIC, "-p", "again", "--json").json
    again = admin("queryMsgById", "-i", first["offsetMsgId"], "-s", "true", "--json").json
    assert [(r["sendStatus"], r["msgId"], r["originalMsgId"]) for r in again] == [
        ("SEND_OK", first["msgId"], first["offsetMsgId"])
    ]
    assert again[0]["offsetMsgId"] != first["offsetMsgId"]
    both = admin("queryMsgByUniqueKey", "-t", TOPIC, "-i", first["msgId"], "-a", "--json").json
    assert [m["offsetMsgId"] for m in both] == [first["offsetMsgId"], again[0]["offsetMsgId"]]
    assert len(admin("queryMsgByUniqueKey", "-t", TOPIC, "-i", first["msgId"], "--json").json) == 1


async def test_binary_bodies_and_consume_message(admin: Admin, cluster: Cluster) -> None:
    topic = "TAdmConsume"
    await create_everywhere(cluster, topic, 1)
    blob = bytes(range(256))
    async with Producer("PGAdmConsume", namesrv_addr=cluster.namesrv_addr) as p:
        queue = MessageQueue(topic, "broker-a", 0)
        binary = await p.send(Message(topic, blob), queue=queue)
        for i in range(5):
            await p.send(Message(topic, f"c{i}".encode(), tags="T"), queue=queue)
        # UTF-8 but not printable; printable but not UTF-8; text with whitespace
        odd = [b"\x00\x07bell", b"caf\xe9", "naïve\ttab\nline".encode()]
        odd_ids = [
            (
                await p.send(Message(topic, b), queue=MessageQueue(topic, "broker-b", 0))
            ).offset_msg_id
            for b in odd
        ]
    found = (await run(admin, "queryMsgById", "-i", binary.offset_msg_id, "--json")).json[0]
    assert found["bodyEncoding"] == "base64" and base64.b64decode(found["body"]) == blob
    seen = (await run(admin, "queryMsgById", "-i", ",".join(odd_ids), "--json")).json
    assert [(m["bodyEncoding"], m["bodySize"]) for m in seen] == [
        ("base64", 6),
        ("base64", 4),
        ("text", 15),
    ]
    assert [base64.b64decode(m["body"]) for m in seen[:2]] == odd[:2]
    assert seen[2]["body"] == "naïve\ttab\nline"
    shown = await run(admin, "queryMsgById", "-i", binary.offset_msg_id)
    assert ["Message", "Body:", "<binary,", "256", "bytes>"] in lines(shown)

    every = await run(admin, "consumeMessage", "-t", topic, "--json")
    assert every.code == 0, every.err
    assert [(m["brokerName"], m["queueOffset"]) for m in every.json] == [
        *(("broker-a", i) for i in range(6)),
        *(("broker-b", i) for i in range(3)),
    ]
    assert [m["body"] for m in every.json[1:6]] == ["c0", "c1", "c2", "c3", "c4"]
    two = await run(admin, "consumeMessage", "-t", topic, "-c", "2", "--json")
    assert [m["queueOffset"] for m in two.json] == [0, 1]
    tail = await run(admin, "consumeMessage", "-t", topic, "-b", "broker-a", "-i", "0", "-o", "4")
    assert lines(tail)[0][:5] == ["#Broker", "Name", "#QID", "#Offset", "#MsgId"]
    assert [(r[2], r[-1]) for r in lines(tail)[1:]] == [("4", "c3"), ("5", "c4")]
    none = await run(admin, "consumeMessage", "-t", topic, "-b", "broker-a", "-i", "0", "-o", "9")
    assert none.code == 0 and "no matched msg, offset=9" in none.out


async def test_tracking_and_consuming_directly(admin: Admin, cluster: Cluster) -> None:
    topic, group = "TAdmTrack", "GAdmTrack"
    await create_everywhere(cluster, topic, 1)
    got = Collect()
    async with push(cluster, group, topic, got) as c:
        await wait_until(lambda: len(c.rebalance.table) >= 2, 20)
        async with Producer("PGAdmTrack", namesrv_addr=cluster.namesrv_addr) as p:
            sent = await p.send(Message(topic, b"track me", tags="TagA"))
        await wait_until(lambda: len(got.msgs) == 1, 20)
        consumed = [{"consumerGroup": group, "trackType": "CONSUMED", "exceptionDesc": None}]
        done = await poll(
            admin,
            lambda r: r.code == 0 and r.json[0]["tracks"] == consumed,
            "queryMsgById",
            "-i",
            sent.offset_msg_id,
            "--json",
        )
        table = await run(admin, "queryMsgById", "-i", sent.offset_msg_id)
        assert [group, "CONSUMED"] in [r[:2] for r in lines(table)]
        await _check_direct(
            admin, got, sent.msg_id, sent.offset_msg_id, topic, group, c.instance.client_id
        )
    offline = await poll(
        admin,
        lambda r: r.json[0]["tracks"][0]["trackType"] == "NOT_ONLINE",
        "queryMsgById",
        "-i",
        sent.offset_msg_id,
        "--json",
    )
    assert (
        offline.json[0]["tracks"][0]["consumerGroup"] == done.json[0]["tracks"][0]["consumerGroup"]
    )


async def _check_direct(
    admin: Admin, got: Collect, msg_id: str, offset_id: str, topic: str, group: str, cid: str
) -> None:
    """-g -d: 309 to the store host, which hands the message to that consumer's listener."""
    direct = await run(
        admin, "queryMsgByUniqueKey", "-t", topic, "-i", msg_id, "-g", group, "-d", cid, "--json"
    )
    assert direct.code == 0, direct.err
    assert direct.json[0]["consumeResult"] == "CR_SUCCESS"
    assert direct.json[0]["offsetMsgId"] == offset_id
    assert got.bodies == [b"track me", b"track me"]  # the listener saw it again
    by_id = await run(admin, "queryMsgById", "-i", offset_id, "-g", group, "-d", cid)
    assert ["consumeResult", "CR_SUCCESS"] in lines(by_id)
    assert got.bodies == [b"track me"] * 3
    got.status = ConsumeStatus.RECONSUME_LATER
    later = await run(admin, "queryMsgById", "-i", offset_id, "-g", group, "-d", cid, "--json")
    assert later.json[0]["consumeResult"] == "CR_LATER"
    nobody = await run(admin, "queryMsgById", "-i", offset_id, "-g", group, "-d", "x@y")
    assert nobody.code == 1 and "not online" in nobody.err


def test_message_commands_errors(admin: Admin, cluster: Cluster) -> None:
    usage: tuple[tuple[str, ...], ...] = (
        ("queryMsgById",),
        ("queryMsgByKey", "-t", "TBW102"),
        ("queryMsgByUniqueKey", "-i", "x"),
        ("queryMsgByOffset", "-t", "TBW102", "-b", "broker-a", "-i", "0"),
        ("sendMessage", "-t", "TBW102"),
        ("consumeMessage",),
    )
    for argv in usage:
        assert admin(*argv).code == 2, argv
    topic = "TAdmMsgErr"
    assert admin("sendMessage", "-t", topic, "-p", "x").code == 0
    port = int(cluster.brokers["broker-a"].addr.rsplit(":", 1)[1])
    far = f"7F000001{port:08X}{2**40:016X}"  # broker-a's address, an offset far past its log
    failing: tuple[tuple[tuple[str, ...], str], ...] = (
        (("queryMsgById", "-i", far), "can not find message by the offset"),
        (("queryMsgById", "-i", "nothex"), "is not an offsetMsgId"),
        (("queryMsgByKey", "-t", topic, "-k", "nokey"), "no message with key nokey"),
        (("queryMsgByUniqueKey", "-t", topic, "-i", "00" * 16), "no message with unique key"),
        (
            ("queryMsgByOffset", "-t", topic, "-b", "broker-a", "-i", "0", "-o", "99"),
            "no message at offset 99",
        ),
        (("queryMsgByKey", "-t", "TAdmNoSuchTopic", "-k", "k"), "TOPIC_NOT_EXIST"),
        (
            ("sendMessage", "-t", topic, "-p", "x", "-i", "1"),
            "Broker name must be set if the queue is chosen!",
        ),
        (("consumeMessage", "-t", topic, "-i", "1"), "Please set the brokerName before queueId!"),
        (("consumeMessage", "-t", topic, "-c", "0"), "Please input a positive messageNumber!"),
        (
            ("consumeMessage", "-t", topic, "-s", str(2**50)),
            "Please set the beginTimestamp before now!",
        ),
    )
    for argv, cause in failing:
        result = admin(*argv)
        assert result.code == 1, (argv, result)
        assert result.err.startswith(f"mqadmin {argv[0]}: ") and result.err.count("\n") == 1
        assert cause in result.err, (argv, result.err)
