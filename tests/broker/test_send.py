"""The send path against real mqnamesrv + mqbroker processes (issue 6, seed 000,
protocol.md 5.1 and 12.1)."""

from __future__ import annotations

import json
import re

from aiorocketmq.broker.configfile import ConfigFile
from aiorocketmq.broker.topics import TopicTable
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol.batch import BatchItem, encode_batch
from aiorocketmq.remoting.protocol.codes import RequestCode, ResponseCode
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.message import encode_properties
from aiorocketmq.remoting.protocol.route import TopicRouteData
from tests.broker.wire import create_topic, route, send_v2, total_messages, view
from tests.cluster import Cluster


async def test_new_topic_is_created_from_tbw102(
    cluster: Cluster, json_client: RemotingClient
) -> None:
    """protocol.md 12.1 / seed 000: a send to an unknown topic with defaultTopic=TBW102 creates
    it with min(4, TBW102's 8) queues and perm 6, persists it and registers it at once;
    the answer carries msgId, queueId, queueOffset, MSG_REGION and TRACE_ON."""
    broker = cluster.add_broker("broker-a")
    resp = await json_client.invoke(broker.addr, send_v2("AutoTopic", b"hello"))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    ext = resp.ext_fields
    assert re.fullmatch(r"[0-9A-F]{32}", ext["msgId"])
    assert 0 <= int(ext["queueId"]) < 4 and ext["queueOffset"] == "0"
    assert (ext["MSG_REGION"], ext["TRACE_ON"]) == ("DefaultRegion", "true")
    saved = TopicTable(ConfigFile(broker.store / "config" / "topics.json"), {}, auto_create=True)
    saved.load(fold=False)  # topics.json and its journal, read as a restart reads them
    topic = saved.topics["AutoTopic"]
    assert (topic.read_queue_nums, topic.write_queue_nums, topic.perm) == (4, 4, 6)
    get_all = RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG)
    tbw = json.loads((await json_client.invoke(broker.addr, get_all)).body)["topicConfigTable"]
    assert (tbw["TBW102"]["readQueueNums"], tbw["TBW102"]["perm"]) == (8, 7)
    got = await route(json_client, cluster.namesrv_addr, "AutoTopic")
    assert got.code == 0, "registered with the name server at once, not after 30 s"
    (qd,) = TopicRouteData.decode(got.body).queue_datas
    assert (qd.broker_name, qd.write_queue_nums, qd.perm) == ("broker-a", 4, 6)
    stored = await view(json_client, broker.addr, ext["msgId"])
    assert (stored.topic, stored.body, stored.queue_offset) == ("AutoTopic", b"hello", 0)
    assert stored.store_host == broker.addr


async def test_stored_properties_drop_wait_and_add_cluster(
    cluster: Cluster, client: RemotingClient
) -> None:
    """protocol.md 5.1 step 11: WAIT is not stored, CLUSTER is added, the rest is kept;
    the born host is the producer's address; V1 long-name headers (code 10) work too."""
    broker = cluster.add_broker("broker-a")
    props = {"TAGS": "TagA", "KEYS": "k1 k2", "WAIT": "true", "custom": "v"}
    resp = await client.invoke(broker.addr, send_v2("PropTopic", b"x", props=props))
    assert resp.code == 0, resp.remark
    stored = await view(client, broker.addr, resp.ext_fields["msgId"])
    assert stored.properties == {
        "TAGS": "TagA",
        "KEYS": "k1 k2",
        "custom": "v",
        "CLUSTER": "DefaultCluster",
    }
    assert stored.born_host.startswith("127.0.0.1:")
    v1 = {
        "producerGroup": "pg",
        "topic": "PropTopic",
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": "4",
        "queueId": "0",
        "sysFlag": "0",
        "bornTimestamp": "1",
        "flag": "7",
        "properties": encode_properties({"TAGS": "V1"}),
    }
    resp = await client.invoke(broker.addr, RemotingCommand.request(10, v1, b"v1 body"))
    assert resp.code == 0, resp.remark
    stored = await view(client, broker.addr, resp.ext_fields["msgId"])
    assert (stored.body, stored.flag, stored.tags, stored.queue_id) == (b"v1 body", 7, "V1", 0)


async def test_batch_goes_to_one_queue(cluster: Cluster, client: RemotingClient) -> None:
    """protocol.md 5.1 (320): a batch body of 32 messages lands in one queue with consecutive
    offsets; each keeps its own properties plus the batch's; msgIds joined with ','."""
    broker = cluster.add_broker("broker-a")
    await client.invoke(broker.addr, create_topic("BatchTopic", 4))
    items = [
        BatchItem(f"m{i}".encode(), i, encode_properties({"KEYS": f"k{i}"})) for i in range(32)
    ]
    cmd = send_v2(
        "BatchTopic",
        encode_batch(items),
        queue_id=2,
        m="true",
        props={"WAIT": "true", "TAGS": "batch"},
    )
    cmd.code = RequestCode.SEND_BATCH_MESSAGE
    resp = await client.invoke(broker.addr, cmd)
    assert resp.code == 0, resp.remark
    ids = resp.ext_fields["msgId"].split(",")
    assert len(ids) == 32 and resp.ext_fields["queueId"] == "2"
    assert resp.ext_fields["queueOffset"] == "0"
    for i, msg_id in enumerate(ids):
        stored = await view(client, broker.addr, msg_id)
        assert (stored.body, stored.flag, stored.queue_id, stored.queue_offset) == (
            f"m{i}".encode(),
            i,
            2,
            i,
        )
        assert stored.properties == {"KEYS": f"k{i}", "TAGS": "batch", "CLUSTER": "DefaultCluster"}


async def test_retry_topic_and_dead_letters(cluster: Cluster, client: RemotingClient) -> None:
    """protocol.md 5.1 step 9 (handleRetryAndDLQ): a %RETRY% send is stored there until its
    reconsume count reaches maxReconsumeTimes (header 'l', else the group's 16); then it goes
    to %DLQ%<group>: 1 queue, perm 6 (fidelity D4: read+write since 4.9.4, as protocol.md's
    table says)."""
    broker = cluster.add_broker("broker-a")
    retry = await client.invoke(broker.addr, send_v2("%RETRY%cg", b"r", j="3", l="16"))
    assert retry.code == 0, retry.remark
    assert (await view(client, broker.addr, retry.ext_fields["msgId"])).topic == "%RETRY%cg"
    dead = await client.invoke(broker.addr, send_v2("%RETRY%cg", b"d", j="16"))
    assert dead.code == 0, dead.remark
    stored = await view(client, broker.addr, dead.ext_fields["msgId"])
    assert (stored.topic, stored.queue_id) == ("%DLQ%cg", 0)
    low_max = await client.invoke(broker.addr, send_v2("%RETRY%cg", b"e", j="2", l="2"))
    assert (await view(client, broker.addr, low_max.ext_fields["msgId"])).topic == "%DLQ%cg"
    configs = await client.invoke(broker.addr, RemotingCommand.request(21))
    table = json.loads(configs.body)["topicConfigTable"]
    assert (table["%DLQ%cg"]["writeQueueNums"], table["%DLQ%cg"]["perm"]) == (1, 6)
    # fidelity D9: from the TBW102 template, min(defaultTopicQueueNums 4, 8) queues
    assert (table["%RETRY%cg"]["writeQueueNums"], table["%RETRY%cg"]["perm"]) == (4, 6)


async def test_prepared_transaction_is_parked_in_the_half_topic(
    cluster: Cluster, client: RemotingClient
) -> None:
    """protocol.md 12.4: TRAN_MSG=true parks the message in RMQ_SYS_TRANS_HALF_TOPIC with
    REAL_TOPIC/REAL_QID, invisible in its topic; with rejectTransactionMessage it is refused."""
    broker = cluster.add_broker("broker-a")
    await client.invoke(broker.addr, create_topic("TxTopic", 4))
    resp = await client.invoke(
        broker.addr,
        send_v2("TxTopic", b"half", queue_id=3, props={"TRAN_MSG": "true", "PGROUP": "pg"}),
    )
    assert resp.code == 0 and resp.ext_fields["queueId"] == "3"
    stored = await view(client, broker.addr, resp.ext_fields["msgId"])
    assert (stored.topic, stored.queue_id) == ("RMQ_SYS_TRANS_HALF_TOPIC", 0)
    assert (stored.properties["REAL_TOPIC"], stored.properties["REAL_QID"]) == ("TxTopic", "3")
    assert await total_messages(client, broker.addr, "TxTopic", 4) == 0
    strict = cluster.add_broker("broker-r", rejectTransactionMessage="true")
    refused = await client.invoke(strict.addr, send_v2("TxTopic", b"x", props={"TRAN_MSG": "true"}))
    assert refused.code == ResponseCode.NO_PERMISSION
    assert refused.remark == "the broker[127.0.0.1] sending transaction message is forbidden"
