"""Fidelity D12, D13, Top-5 and §1.3 rows 28, 315, 300, 328: what mqadmin reads from a
4.9.8 broker's runtime info, stats, consumer groups and producer table, against real
processes, with the JSON headers Java clients send."""

from __future__ import annotations

import asyncio
import json
import re
import time

from aiorocketmq.broker.processors.runtime import human_bytes, java_double
from aiorocketmq.remoting.client import RemotingClient
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.codes import LanguageCode, MQVersion
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.heartbeat import HeartbeatData
from aiorocketmq.remoting.protocol.message import decode_records
from aiorocketmq.remoting.protocol.route import decode_kv_table
from tests.broker.wire import create_topic, heartbeat, pull, send_v2
from tests.cluster import BrokerProc, Cluster

# The keys a 4.9.8 broker with the default store config (no transient store pool, one
# CommitLog path, no delay level used yet) returns for GET_BROKER_RUNTIME_INFO, read from
# rocketmq-all-4.9.8: StoreStatsService.getRuntimeInfo (17) ...
STORE_STATS_KEYS = {
    "bootTimestamp", "runtime", "putMessageEntireTimeMax", "putMessageTimesTotal",
    "putMessageFailedTimes", "putMessageSizeTotal", "putMessageDistributeTime",
    "putMessageAverageSize", "dispatchMaxBuffer", "getMessageEntireTimeMax", "putTps",
    "getFoundTps", "getMissTps", "getTotalTps", "getTransferedTps", "putLatency99",
    "putLatency999",
}  # fmt: skip
# ... DefaultMessageStore.getRuntimeInfo (4, plus commitLogDiskRatio_<path> per CommitLog path
# and scheduleMessageOffset_<level> per delay level ScheduleMessageService holds) ...
MESSAGE_STORE_KEYS = {
    "commitLogDiskRatio", "consumeQueueDiskRatio", "commitLogMinOffset", "commitLogMaxOffset",
}  # fmt: skip
# ... and AdminBrokerProcessor.prepareRuntimeInfo (26).
BROKER_KEYS = {
    "brokerVersionDesc", "brokerVersion", "msgPutTotalYesterdayMorning",
    "msgPutTotalTodayMorning", "msgPutTotalTodayNow", "msgGetTotalYesterdayMorning",
    "msgGetTotalTodayMorning", "msgGetTotalTodayNow", "sendThreadPoolQueueSize",
    "sendThreadPoolQueueCapacity", "pullThreadPoolQueueSize", "pullThreadPoolQueueCapacity",
    "queryThreadPoolQueueSize", "queryThreadPoolQueueCapacity", "EndTransactionQueueSize",
    "EndTransactionThreadPoolQueueCapacity", "dispatchBehindBytes", "pageCacheLockTimeMills",
    "sendThreadPoolQueueHeadWaitTimeMills", "pullThreadPoolQueueHeadWaitTimeMills",
    "queryThreadPoolQueueHeadWaitTimeMills", "earliestMessageTimeStamp",
    "startAcceptSendRequestTimeStamp", "remainTransientStoreBufferNumbs",
    "remainHowManyDataToFlush", "commitLogDirCapacity",
}  # fmt: skip
# values Java writes with String.valueOf(long/int): mqadmin parses several with Long.parseLong
LONG_KEYS = {
    "bootTimestamp", "putMessageEntireTimeMax", "putMessageTimesTotal", "putMessageFailedTimes",
    "putMessageSizeTotal", "dispatchMaxBuffer", "getMessageEntireTimeMax", "commitLogMinOffset",
    "commitLogMaxOffset", "brokerVersion", *(k for k in BROKER_KEYS if k.startswith("msg")),
    *(k for k in BROKER_KEYS if "ThreadPool" in k or k.startswith("EndTransaction")),
    "dispatchBehindBytes", "pageCacheLockTimeMills", "earliestMessageTimeStamp",
    "startAcceptSendRequestTimeStamp", "remainTransientStoreBufferNumbs",
}  # fmt: skip
TPS_KEYS = {"putTps", "getFoundTps", "getMissTps", "getTotalTps", "getTransferedTps"}
JAVA_DOUBLE = re.compile(r"-?(\d+\.\d+(E-?\d+)?|NaN|Infinity)")  # Double.toString
HUMAN_BYTES = r"(\d+ B|\d+\.\d [KMGTPE]iB)"  # MixAll.humanReadableByteCount(n, false)


def java_keys(b: BrokerProc) -> set[str]:
    path = b.store / "commitlog"  # storePathCommitLog defaults to <storePathRootDir>/commitlog
    return STORE_STATS_KEYS | MESSAGE_STORE_KEYS | BROKER_KEYS | {f"commitLogDiskRatio_{path}"}


def parse_long(text: str) -> int:
    """Long.parseLong: an optional sign and decimal digits, within 64 bits."""
    assert re.fullmatch(r"[-+]?\d+", text), text
    value = int(text)
    assert -(2**63) <= value < 2**63
    return value


def cluster_list_tps(text: str) -> float:
    """ClusterListSubCommand: ``putTps.split(" ")``, then Double.parseDouble of the first."""
    parts = text.split(" ")
    while parts and parts[-1] == "":  # Java's split drops trailing empty strings
        parts.pop()
    return float(parts[0]) if parts else 0.0


def req(code: int, **ext: str) -> RemotingCommand:
    return RemotingCommand.request(code, ext)


async def runtime_info(cli: RemotingClient, addr: str) -> dict[str, str]:
    resp = await cli.invoke(addr, req(C.GET_BROKER_RUNTIME_INFO))
    assert resp.code == 0, resp.remark
    return decode_kv_table(resp.body)


# 5.x DefaultMessageStore.getRuntimeInfo, with the timer wheel on
TIMER_KEYS = {"timerReadBehind", "timerOffsetBehind", "timerCongestNum", "timerEnqueueTps",
              "timerDequeueTps"}  # fmt: skip


def check_java_formats(info: dict[str, str]) -> None:
    """Every value the way 4.9.8 writes it, parsed the way mqadmin parses it."""
    for key in LONG_KEYS:
        parse_long(info[key])
    for key in TPS_KEYS:  # three windows: 10 s, 1 min, 10 min
        windows = info[key].split(" ")
        assert len(windows) == 3 and all(JAVA_DOUBLE.fullmatch(w) for w in windows), info[key]
        cluster_list_tps(info[key])
    for key in ("commitLogDiskRatio", "consumeQueueDiskRatio", "putMessageAverageSize"):
        assert JAVA_DOUBLE.fullmatch(info[key]), (key, info[key])
    assert 0 < float(info["commitLogDiskRatio"]) <= 1  # clusterList: Double.valueOf
    assert info["brokerVersionDesc"] == "V4_9_8"
    assert info["brokerVersion"] == str(MQVersion.V4_9_8)
    assert (info["putLatency99"], info["putLatency999"]) == ("0.00", "0.00")  # %.2f
    assert re.fullmatch(r"\[ \d+ days, \d+ hours, \d+ minutes, \d+ seconds \]", info["runtime"])
    assert re.fullmatch(HUMAN_BYTES, info["remainHowManyDataToFlush"])
    capacity = rf"Total : {HUMAN_BYTES}, Free : {HUMAN_BYTES}\."
    assert re.fullmatch(capacity, info["commitLogDirCapacity"]), info["commitLogDirCapacity"]
    assert info["remainTransientStoreBufferNumbs"] == str(2**31 - 1)  # pool off: MAX_VALUE


async def test_runtime_info_has_java_s_keys_and_formats(
    cluster: Cluster, json_client: RemotingClient
) -> None:
    """Fidelity D12 (row 28): exactly the 48 keys 4.9.8 returns, no more (no brokerActive or
    topicCount), values in Java's formats, parsed as clusterList and brokerStatus parse them;
    a delay level in use adds scheduleMessageOffset_<level> "offset,maxOffset"; the timer
    wheel on (the default), 5.x's five timer keys too (issue 36: clusterList's
    #Timer(Progress)), off exactly 4.9.8's."""
    off = cluster.add_broker("broker-off", timerWheelEnable="false")
    assert set(await runtime_info(json_client, off.addr)) == java_keys(off)
    b = cluster.add_broker("broker-a")
    fresh = await runtime_info(json_client, b.addr)
    assert set(fresh) == java_keys(b) | TIMER_KEYS and len(fresh) == 48 + 5
    check_java_formats(fresh)
    assert fresh["earliestMessageTimeStamp"] == "-1"  # an empty CommitLog
    assert fresh["putMessageTimesTotal"] == "1"  # Java reports at least 1
    assert fresh["msgPutTotalYesterdayMorning"] == fresh["msgPutTotalTodayMorning"] == "0"
    began = time.time_ns() // 1_000_000
    assert (await json_client.invoke(b.addr, create_topic("Rt", 1))).code == 0
    for _ in range(4):
        sent = await json_client.invoke(b.addr, send_v2("Rt", b"hello", queue_id=0))
        assert sent.code == 0
    got = await json_client.invoke(b.addr, pull("g_rt", "Rt", 0, 0, sys_flag=4, subscription="*"))
    assert got.code == 0 and len(decode_records(got.body)) == 4
    info = await runtime_info(json_client, b.addr)
    assert set(info) == java_keys(b) | TIMER_KEYS
    check_java_formats(info)
    assert (info["msgPutTotalTodayNow"], info["msgGetTotalTodayNow"]) == ("4", "4")
    assert info["putMessageSizeTotal"] == info["commitLogMaxOffset"]  # only our four records
    assert began <= parse_long(info["earliestMessageTimeStamp"]) <= time.time_ns() // 1_000_000
    assert cluster_list_tps(info["putTps"]) > 0 and cluster_list_tps(info["getFoundTps"]) > 0
    delayed = send_v2("Rt", b"later", queue_id=0, props={"DELAY": "1"})
    assert (await json_client.invoke(b.addr, delayed)).code == 0
    async with asyncio.timeout(10):  # level 1 is 1 s
        while "scheduleMessageOffset_1" not in info:
            await asyncio.sleep(0.1)
            info = await runtime_info(json_client, b.addr)
    assert info["scheduleMessageOffset_1"] == "1,1"
    assert set(info) == java_keys(b) | TIMER_KEYS | {"scheduleMessageOffset_1"}


async def stats(cli: RemotingClient, addr: str, name: str, key: str) -> dict[str, dict[str, float]]:
    resp = await cli.invoke(addr, req(C.VIEW_BROKER_STATS_DATA, statsName=name, statsKey=key))
    assert resp.code == 0, resp.remark
    data: dict[str, dict[str, float]] = json.loads(resp.body)
    assert set(data) == {"statsMinute", "statsHour", "statsDay"}  # BrokerStatsData
    for window in data.values():
        assert set(window) == {"sum", "tps", "avgpt"}  # BrokerStatsItem
    return data


async def test_view_broker_stats_data_sizes_group_gets_and_unknown_keys(
    cluster: Cluster, json_client: RemotingClient
) -> None:
    """Fidelity D13 (row 315): TOPIC_PUT_SIZE counts bytes stored, TOPIC_PUT_NUMS messages;
    GROUP_GET_NUMS / GROUP_GET_SIZE ("topic@group") count pulls that found messages
    (PullMessageProcessor); an unknown name or key is SYSTEM_ERROR "The stats <n> <k> not
    exist"; the body is BrokerStatsData with sum, tps, avgpt per window."""
    b, cli = cluster.add_broker("broker-a"), json_client
    assert (await cli.invoke(b.addr, create_topic("St", 1))).code == 0
    for body in (b"a" * 10, b"b" * 100, b"c" * 1000):
        assert (await cli.invoke(b.addr, send_v2("St", body, queue_id=0))).code == 0
    stored = int((await runtime_info(cli, b.addr))["commitLogMaxOffset"])
    nums = await stats(cli, b.addr, "TOPIC_PUT_NUMS", "St")
    size = await stats(cli, b.addr, "TOPIC_PUT_SIZE", "St")
    for window in ("statsMinute", "statsHour", "statsDay"):
        assert (nums[window]["sum"], nums[window]["avgpt"]) == (3, 1.0)
        assert (size[window]["sum"], size[window]["avgpt"]) == (stored, stored / 3)
    assert 0 < nums["statsMinute"]["tps"] < size["statsMinute"]["tps"]
    no_gets = req(C.VIEW_BROKER_STATS_DATA, statsName="GROUP_GET_NUMS", statsKey="St@g_st")
    missing = await cli.invoke(b.addr, no_gets)
    assert (missing.code, missing.remark) == (1, "The stats <GROUP_GET_NUMS> <St@g_st> not exist")
    got = await cli.invoke(b.addr, pull("g_st", "St", 0, 0, sys_flag=4, subscription="*"))
    assert got.code == 0
    empty = await cli.invoke(b.addr, pull("g_st", "St", 0, 3, sys_flag=4, subscription="*"))
    assert empty.code != 0  # found nothing: not counted
    gets = await stats(cli, b.addr, "GROUP_GET_NUMS", "St@g_st")
    assert (gets["statsMinute"]["sum"], gets["statsMinute"]["avgpt"]) == (3, 3.0)  # one pull
    got_size = await stats(cli, b.addr, "GROUP_GET_SIZE", "St@g_st")
    assert got_size["statsDay"]["sum"] == len(got.body) == stored
    for name, key in (("TOPIC_PUT_NUMS", "Nope"), ("NO_SUCH_STATS", "St")):
        resp = await cli.invoke(b.addr, req(C.VIEW_BROKER_STATS_DATA, statsName=name, statsKey=key))
        assert (resp.code, resp.remark) == (1, f"The stats <{name}> <{key}> not exist")


async def test_query_topic_consume_by_who(cluster: Cluster, json_client: RemotingClient) -> None:
    """Fidelity Top-5 (row 300, mqadmin statsAll / topicList -c): GroupList of the groups
    online that subscribe to the topic and the groups with offsets on it
    (AdminBrokerProcessor.queryTopicConsumeByWho)."""
    b, cli = cluster.add_broker("broker-a"), json_client
    for topic in ("Who", "Other"):
        assert (await cli.invoke(b.addr, create_topic(topic, 2))).code == 0
    for group, topic in (("g_online", "Who"), ("g_elsewhere", "Other")):
        beat = await cli.invoke(b.addr, heartbeat(f"cid-{group}", group, (topic, "*")))
        assert beat.code == 0
    commit = req(
        C.UPDATE_CONSUMER_OFFSET,
        consumerGroup="g_offsets", topic="Who", queueId="1", commitOffset="0",
    )  # fmt: skip
    assert (await cli.invoke(b.addr, commit)).code == 0
    resp = await cli.invoke(b.addr, req(C.QUERY_TOPIC_CONSUME_BY_WHO, topic="Who"))
    assert resp.code == 0, resp.remark
    assert set(json.loads(resp.body)["groupList"]) == {"g_online", "g_offsets"}
    none = await cli.invoke(b.addr, req(C.QUERY_TOPIC_CONSUME_BY_WHO, topic="Nobody"))
    assert (none.code, json.loads(none.body)) == (0, {"groupList": []})


async def test_get_all_producer_info(cluster: Cluster, json_client: RemotingClient) -> None:
    """Fidelity row 328 (mqadmin producer): ProducerTableInfo, per producer group its
    clients as ProducerInfo {clientId, remoteIP, language, version, lastUpdateTimestamp}
    (ProducerManager.getProducerTable)."""
    b = cluster.add_broker("broker-a")
    before = time.time_ns() // 1_000_000
    beat = RemotingCommand.request(
        C.HEART_BEAT, {}, HeartbeatData(client_id="10.0.0.9@p1", producers=["PG"]).encode()
    )
    beat.language, beat.version = LanguageCode.JAVA, MQVersion.V4_9_8
    assert (await json_client.invoke(b.addr, beat)).code == 0
    resp = await json_client.invoke(b.addr, req(C.GET_ALL_PRODUCER_INFO))
    assert resp.code == 0, resp.remark
    table = json.loads(resp.body)
    assert list(table) == ["data"] and list(table["data"]) == ["PG"]
    [producer] = table["data"]["PG"]
    assert set(producer) == {"clientId", "remoteIP", "language", "version", "lastUpdateTimestamp"}
    assert producer["clientId"] == "10.0.0.9@p1"
    assert re.fullmatch(r"/127\.0\.0\.1:\d+", producer["remoteIP"])  # SocketAddress.toString
    assert (producer["language"], producer["version"]) == ("JAVA", MQVersion.V4_9_8)
    assert before - 1000 <= producer["lastUpdateTimestamp"] <= time.time_ns() // 1_000_000


def test_java_number_texts() -> None:
    """Fidelity D12: Double.toString and MixAll.humanReadableByteCount as Java writes them."""
    cases = [(0.0, "0.0"), (1.5, "1.5"), (1 / 3, "0.3333333333333333"), (1e7, "1.0E7"),
             (1.5e-5, "1.5E-5"), (0.001, "0.001"), (12345678.9, "1.23456789E7")]  # fmt: skip
    assert [java_double(x) for x, _ in cases] == [text for _, text in cases]
    sizes = [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1280, "1.3 KiB"),
             (3 * 2**30, "3.0 GiB")]  # fmt: skip
    assert [human_bytes(n) for n, _ in sizes] == [text for _, text in sizes]


async def test_consume_stats_tps_and_unsubscribed_topics(
    cluster: Cluster, json_client: RemotingClient
) -> None:
    """Fidelity §1.3 row 208 (AdminBrokerProcessor.getConsumeStats): `consumeTps` is the
    group's GROUP_GET_NUMS per second over the last minute (mqadmin consumerProgress prints it
    as Consume TPS), and a topic the online group does not subscribe is left out."""
    b, cli = cluster.add_broker("broker-a"), json_client
    for topic in ("Tps", "Unsub"):
        assert (await cli.invoke(b.addr, create_topic(topic, 1))).code == 0
        assert (await cli.invoke(b.addr, send_v2(topic, b"x", queue_id=0))).code == 0
    assert (await cli.invoke(b.addr, heartbeat("cid-tps", "g_tps", ("Tps", "*")))).code == 0
    got = await cli.invoke(b.addr, pull("g_tps", "Tps", 0, 0, sys_flag=1, commit=0))
    assert got.code == 0
    commit = req(
        C.UPDATE_CONSUMER_OFFSET,
        consumerGroup="g_tps",
        topic="Unsub",
        queueId="0",
        commitOffset="1",
    )
    assert (await cli.invoke(b.addr, commit)).code == 0
    answer = await cli.invoke(b.addr, req(C.GET_CONSUME_STATS, consumerGroup="g_tps"))
    assert answer.code == 0, answer.remark
    body = fastjson.loads(answer.body)
    assert body["consumeTps"] > 0
    assert {dict(mq)["topic"] for mq in body["offsetTable"]} == {"Tps"}
