"""mqadmin's message commands against the package's cluster: sendMessage (a Producer),
queryMsgById (33; by UNIQ_KEY with -t; tracking 300/203/208/106; -g -d 309), queryMsgByKey
(105 + 12 per broker), queryMsgByUniqueKey (12 with _UNIQUE_KEY_QUERY; -g -d 309),
queryMsgByOffset (one pull) and consumeMessage (pulls, bounded by -c)."""

from __future__ import annotations

import base64

from client import ConsumeStatus, Message, MessageQueue, Producer
from tests.admin.test_group_cmds import Admin, lines, poll, push, run
from tests.client.conftest import create_everywhere
from tests.client.test_push import Collect
from tests.cluster import Cluster
from tests.util import wait_until


def test_send_message_and_find_it_every_way(admin: Admin, cluster: Cluster) -> None:
    topic = "TAdmMsg"
    sent = admin(
        "sendMessage", "-t", topic, "-p", "hello admin", "-k", "KAdm1 KAdm2", "-c", "TagA", "--json"
    )
    assert sent.code == 0, sent.err
    s = sent.json
    assert s["sendStatus"] == "SEND_OK" and s["brokerName"] in cluster.brokers
    table = admin("sendMessage", "-t", topic, "-p", "to queue 1", "-b", "broker-b", "-i", "1")
    assert table.code == 0, table.err
    assert lines(table)[0] == ["#Broker", "Name", "#QID", "#Send", "Result", "#MsgId"]
    assert lines(table)[1][:3] == ["broker-b", "1", "SEND_OK"]

    by_id = admin("queryMsgById", "-i", s["offsetMsgId"], "--json").json
    assert len(by_id) == 1
    m = by_id[0]
    assert (m["msgId"], m["offsetMsgId"], m["topic"], m["tags"], m["keys"]) == (
        s["msgId"],
        s["offsetMsgId"],
        topic,
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
    shown = admin("queryMsgById", "-i", s["offsetMsgId"])
    assert ["OffsetID:", s["offsetMsgId"]] in lines(shown) and ["Tags:", "[TagA]"] in lines(shown)
    assert ["Message", "Body:", "hello", "admin"] in lines(shown) and "No Consumer" in shown.out
    # a producer's id (UNIQ_KEY) is no offsetMsgId: with -t it is looked up by unique key
    assert (
        admin("queryMsgById", "-i", s["msgId"], "-t", topic, "--json").json[0]["offsetMsgId"]
        == s["offsetMsgId"]
    )
    assert "give -t <topic>" in admin("queryMsgById", "-i", s["msgId"]).err

    for key in ("KAdm1", "KAdm2"):
        keyed = admin("queryMsgByKey", "-t", topic, "-k", key, "--json")
        assert [(k["msgId"], k["queueOffset"], k["brokerName"]) for k in keyed.json] == [
            (s["msgId"], s["queueOffset"], s["brokerName"])
        ]
    keyed = admin("queryMsgByKey", "-t", topic, "-k", "KAdm1")
    assert lines(keyed) == [
        ["#Message", "ID", "#QID", "#Offset"],
        [s["msgId"], str(s["queueId"]), str(s["queueOffset"])],
    ]
    later = admin(
        "queryMsgByKey", "-t", topic, "-k", "KAdm1", "-b", str(m["storeTimestamp"] + 60_000)
    )
    assert later.code == 1 and "no message with key KAdm1" in later.err

    unique = admin("queryMsgByUniqueKey", "-t", topic, "-i", s["msgId"], "--json").json
    assert [(u["offsetMsgId"], u["body"]) for u in unique] == [(s["offsetMsgId"], "hello admin")]
    assert ["Topic:", topic] in lines(admin("queryMsgByUniqueKey", "-t", topic, "-i", s["msgId"]))

    at = admin(
        "queryMsgByOffset",
        "-t",
        topic,
        "-b",
        s["brokerName"],
        "-i",
        str(s["queueId"]),
        "-o",
        str(s["queueOffset"]),
        "--json",
    )
    assert at.code == 0, at.err
    assert (at.json["msgId"], at.json["body"]) == (s["msgId"], "hello admin")
    text = admin(
        "queryMsgByOffset",
        "-t",
        topic,
        "-b",
        s["brokerName"],
        "-i",
        str(s["queueId"]),
        "-o",
        str(s["queueOffset"]),
    )
    assert ["Message", "Body:", "hello", "admin"] in lines(text)
    to_queue = admin("queryMsgByUniqueKey", "-t", topic, "-i", lines(table)[1][3], "--json").json
    assert (to_queue[0]["body"], to_queue[0]["queueId"]) == ("to queue 1", 1)


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
        done = await poll(
            admin,
            lambda r: (
                r.code == 0
                and r.json[0]["tracks"][:1]
                == [{"consumerGroup": group, "trackType": "CONSUMED", "exceptionDesc": None}]
            ),
            "queryMsgById",
            "-i",
            sent.offset_msg_id,
            "--json",
        )
        assert len(done.json[0]["tracks"]) == 1
        table = await run(admin, "queryMsgById", "-i", sent.offset_msg_id)
        assert [group, "CONSUMED"] in [r[:2] for r in lines(table)]

        cid = c.instance.client_id
        direct = await run(
            admin,
            "queryMsgByUniqueKey",
            "-t",
            topic,
            "-i",
            sent.msg_id,
            "-g",
            group,
            "-d",
            cid,
            "--json",
        )
        assert direct.code == 0, direct.err
        assert direct.json[0]["consumeResult"] == "CR_SUCCESS"
        assert direct.json[0]["offsetMsgId"] == sent.offset_msg_id
        assert got.bodies == [b"track me", b"track me"]  # the listener saw it again
        by_id = await run(admin, "queryMsgById", "-i", sent.offset_msg_id, "-g", group, "-d", cid)
        assert ["consumeResult", "CR_SUCCESS"] in lines(by_id)
        assert got.bodies == [b"track me"] * 3
        got.status = ConsumeStatus.RECONSUME_LATER
        later = await run(
            admin, "queryMsgById", "-i", sent.offset_msg_id, "-g", group, "-d", cid, "--json"
        )
        assert later.json[0]["consumeResult"] == "CR_LATER"
        nobody = await run(
            admin, "queryMsgById", "-i", sent.offset_msg_id, "-g", group, "-d", "x@y"
        )
        assert nobody.code == 1 and "not online" in nobody.err
    offline = await poll(
        admin,
        lambda r: r.json[0]["tracks"][0]["trackType"] == "NOT_ONLINE",
        "queryMsgById",
        "-i",
        sent.offset_msg_id,
        "--json",
    )
    assert offline.json[0]["tracks"][0]["consumerGroup"] == group


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
