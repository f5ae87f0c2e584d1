"""The fuzzer's cases: one request of any code, or a short sequence, built from a seed.

A case is a generator of ``Step``s: the runner sends each step's request and sends the answer
back in (None if there was none), so a later step may use what an earlier one was told (the
offset of a message just stored). A case is a pure function of its seed and the ``World`` it
starts from: a reproducer replays it on fresh servers. A step may carry ``refuse``: why the
server should refuse it (an oracle: a Java int out of range, a group name Apache's
Validators refuse); a success then is a finding.
"""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Final

from aiorocketmq.namesrv.processors import JAVA_ONLY_CODES
from aiorocketmq.remoting.protocol.codes import LanguageCode
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.headers import admin, consumer, namesrv, send, transaction
from aiorocketmq.remoting.protocol.msgid import parse_offset_msg_id
from benchmarks import fuzz_bodies as bodies
from benchmarks.fuzz_values import (
    GROUPS,
    NOT_ALLOWED_SEND,
    SYSTEM_TOPICS,
    World,
    bad_topic_name,
    header,
    odd_string,
    unretriable_group,
)
from benchmarks.fuzz_wire import JSON, MSGPACK, ROCKETMQ, Req


@dataclass
class Step:
    req: Req
    notes: list[str] = field(default_factory=list)  # which fields were mutated
    refuse: str | None = None  # the server should refuse this (an oracle), and why


Case = Generator[Step, "object", None]
HEADERS: Final[dict[int, tuple[type | None, bool]]] = {
    C.SEND_MESSAGE: (send.SendMessageHeader, False),
    C.SEND_MESSAGE_V2: (send.SendMessageHeader, True),
    C.SEND_BATCH_MESSAGE: (send.SendMessageHeader, True),
    C.CONSUMER_SEND_MSG_BACK: (consumer.SendMsgBackRequestHeader, False),
    C.END_TRANSACTION: (transaction.EndTransactionRequestHeader, False),
    C.RESUME_CHECK_HALF_MESSAGE: (transaction.CheckTransactionStateRequestHeader, False),
    C.PULL_MESSAGE: (consumer.PullMessageRequestHeader, False),
    C.UNREGISTER_CLIENT: (consumer.UnregisterClientRequestHeader, False),
    C.GET_CONSUMER_LIST_BY_GROUP: (consumer.ConsumerGroupHeader, False),
    C.QUERY_CONSUMER_OFFSET: (consumer.QueueOffsetRequestHeader, False),
    C.UPDATE_CONSUMER_OFFSET: (consumer.UpdateConsumerOffsetRequestHeader, False),
    C.DELETE_SUBSCRIPTIONGROUP: (consumer.DeleteGroupRequestHeader, False),
    C.GET_CONSUMER_CONNECTION_LIST: (consumer.ConsumerGroupHeader, False),
    C.GET_PRODUCER_CONNECTION_LIST: (consumer.ProducerGroupHeader, False),
    C.GET_CONSUME_STATS: (consumer.ConsumeStatsRequestHeader, False),
    C.INVOKE_BROKER_TO_RESET_OFFSET: (consumer.ResetOffsetRequestHeader, False),
    C.UPDATE_AND_CREATE_TOPIC: (admin.CreateTopicRequestHeader, False),
    C.DELETE_TOPIC_IN_BROKER: (admin.TopicRequestHeader, False),
    C.VIEW_BROKER_STATS_DATA: (admin.StatsRequestHeader, False),
    C.QUERY_TOPIC_CONSUME_BY_WHO: (admin.TopicRequestHeader, False),
    C.GET_CONSUMER_RUNNING_INFO: (consumer.ConsumerRunningInfoRequestHeader, False),
    C.CONSUME_MESSAGE_DIRECTLY: (consumer.ConsumeMessageDirectlyRequestHeader, False),
    C.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: (consumer.ConsumerStatusRequestHeader, False),
    C.GET_MAX_OFFSET: (admin.QueueRequestHeader, False),
    C.GET_MIN_OFFSET: (admin.QueueRequestHeader, False),
    C.GET_EARLIEST_MSG_STORETIME: (admin.QueueRequestHeader, False),
    C.SEARCH_OFFSET_BY_TIMESTAMP: (admin.SearchOffsetRequestHeader, False),
    C.VIEW_MESSAGE_BY_ID: (admin.ViewMessageRequestHeader, False),
    C.QUERY_MESSAGE: (admin.QueryMessageRequestHeader, False),
    C.GET_TOPIC_STATS_INFO: (admin.TopicRequestHeader, False),
    # the name server's
    C.PUT_KV_CONFIG: (namesrv.KVConfigHeader, False),
    C.GET_KV_CONFIG: (namesrv.KVConfigHeader, False),
    C.DELETE_KV_CONFIG: (namesrv.KVConfigHeader, False),
    C.REGISTER_BROKER: (namesrv.RegisterBrokerRequestHeader, False),
    C.UNREGISTER_BROKER: (namesrv.BrokerIdentityHeader, False),
    C.QUERY_DATA_VERSION: (namesrv.BrokerIdentityHeader, False),
    C.GET_ROUTEINFO_BY_TOPIC: (namesrv.GetRouteInfoRequestHeader, False),
    C.WIPE_WRITE_PERM_OF_BROKER: (namesrv.BrokerNameHeader, False),
    C.ADD_WRITE_PERM_OF_BROKER: (namesrv.BrokerNameHeader, False),
    C.DELETE_TOPIC_IN_NAMESRV: (namesrv.TopicHeader, False),
    C.GET_KVLIST_BY_NAMESPACE: (namesrv.NamespaceHeader, False),
    C.GET_TOPICS_BY_CLUSTER: (namesrv.ClusterHeader, False),
}
# codes with no RequestCode name: a server must answer (broker) or ignore (name server) them
UNKNOWN_CODES: Final = (0, -1, 9999, 2**15 - 1, 2**31 - 1, -(2**31), 1_000_000)
NAMESRV_CODES: Final = frozenset({
    C.PUT_KV_CONFIG, C.GET_KV_CONFIG, C.DELETE_KV_CONFIG, C.REGISTER_BROKER,
    C.UNREGISTER_BROKER, C.GET_ROUTEINFO_BY_TOPIC, C.GET_BROKER_CLUSTER_INFO,
    C.WIPE_WRITE_PERM_OF_BROKER, C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, C.DELETE_TOPIC_IN_NAMESRV,
    C.GET_KVLIST_BY_NAMESPACE, C.GET_TOPICS_BY_CLUSTER, C.QUERY_DATA_VERSION,
    C.ADD_WRITE_PERM_OF_BROKER,
})  # fmt: skip


def namesrv_silent(code: int) -> bool:
    """A name server never answers a code it does not know (fidelity D19)."""
    return code not in NAMESRV_CODES and code not in JAVA_ONLY_CODES


def request(code: int, world: World, rng: random.Random, **fixed: str) -> Step:
    """One request of ``code``: its typed header mutated, a body built for it, any format."""
    cls, v2 = HEADERS.get(code, (None, False))
    ext: dict[str, str]
    notes: list[str]
    if cls is None and rng.random() < 0.7:
        ext, notes = {}, []
    else:
        ext, notes = header(cls, world, rng, v2=v2)
    ext.update(fixed)
    body, refuse = bodies.body(code, world, rng, ext)
    refuse = refuse or topic_refusal(code, ext)
    req = Req(code, ext, body, stype=rng.choice((JSON, ROCKETMQ, MSGPACK)))
    if rng.random() < 0.03:
        req.language = rng.choice((LanguageCode.PYTHON, 99, -1))
        req.version = rng.choice((0, -1, 2**15 - 1, 121))
    return Step(req, notes, refuse)


def topic_refusal(code: int, ext: dict[str, str]) -> str | None:
    """Why a topic creation or a send must be refused for its topic (TopicValidator, the
    system topics one may not create or send to), or None."""
    key = "topic" if code in (C.UPDATE_AND_CREATE_TOPIC, C.SEND_MESSAGE) else "b"
    if code not in (C.UPDATE_AND_CREATE_TOPIC, C.SEND_MESSAGE, C.SEND_MESSAGE_V2,
                    C.SEND_BATCH_MESSAGE) or key not in ext:  # fmt: skip
        return None
    name = ext[key]
    why = bad_topic_name(name)
    if (
        why is None
        and code == C.UPDATE_AND_CREATE_TOPIC
        and (name in SYSTEM_TOPICS or name.startswith("rmq_sys_"))
    ):
        why = f"a system topic ({name})"
    if why is None and code != C.UPDATE_AND_CREATE_TOPIC and name in NOT_ALLOWED_SEND:
        why = f"a topic no client may send to ({name})"
    return why


def single(code: int) -> Callable[[World, random.Random], Case]:
    def case(world: World, rng: random.Random) -> Case:
        yield request(code, world, rng)

    case.__name__ = f"single_{code}"
    return case


def _offset(answer: object, world: World) -> int | None:
    """The commitlog offset of a message a send just stored (its offsetMsgId)."""
    ext = getattr(answer, "ext_fields", None)
    if getattr(answer, "code", None) != 0 or not ext or "msgId" not in ext:
        return None
    msg_id = ext["msgId"].split(",")[0]
    try:
        _host, offset = parse_offset_msg_id(msg_id)
    except ValueError:
        return None
    world.remember(world.offsets, offset)
    world.remember(world.msg_ids, msg_id)
    return offset


def _send(world: World, rng: random.Random, topic: str, queue: int) -> Step:
    ext = {"a": "fuzz_pg", "b": topic, "c": "TBW102", "d": "4", "e": str(queue), "f": "0",
           "g": "1700000000000", "h": "0", "i": "KEYS\x01k\x02TAGS\x01t\x02"}  # fmt: skip
    return Step(Req(C.SEND_MESSAGE_V2, ext, b"fuzz " * rng.randrange(1, 40), stype=MSGPACK))


def group_name(rng: random.Random) -> str:
    return odd_string(rng) if rng.random() < 0.5 else rng.choice(GROUPS)


def group_then_heartbeat(world: World, rng: random.Random) -> Case:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, then a HEART_BEAT naming that group: the
    heartbeat creates %RETRY%<group> from the group's config (N1's path)."""
    name = group_name(rng)
    body, refuse = bodies.group_config(world, rng, name)
    yield Step(Req(C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body, rng.choice((0, 1, 2))),
               ["body"], refuse)  # fmt: skip
    beat, refuse = bodies.heartbeat(world, rng, group=name)
    yield Step(Req(C.HEART_BEAT, {}, beat, rng.choice((0, 1, 2))), ["body"], refuse)


def send_then_send_back(world: World, rng: random.Random) -> Case:
    """A message stored, a group made, then CONSUMER_SEND_MSG_BACK of that message for that
    group at some delay level (N2's path): the schedule service must deliver it later."""
    answer = yield _send(world, rng, "FuzzT", rng.randrange(4))
    offset = _offset(answer, world)
    name = group_name(rng)
    body, refuse = bodies.group_config(world, rng, name, sane_numbers=rng.random() < 0.7)
    yield Step(Req(C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body, MSGPACK), ["body"], refuse)
    fixed = {"group": name, "offset": str(offset if offset is not None else 0)}
    if rng.random() < 0.6:
        fixed["delayLevel"] = str(rng.randrange(0, 4))
    step = request(C.CONSUMER_SEND_MSG_BACK, world, rng, **fixed)
    step.refuse = step.refuse or (
        f"send-back for a group that cannot be retried ({why})"
        if (why := unretriable_group(name))
        else None
    )
    yield step


def topic_send_pull(world: World, rng: random.Random) -> Case:
    """A topic made with hostile numbers or name, written to and read from."""
    create = request(C.UPDATE_AND_CREATE_TOPIC, world, rng)
    yield create
    topic = create.req.ext.get("topic", "FuzzT")
    queue = rng.randrange(8) if rng.random() < 0.8 else rng.choice((-1, 8, 255, 1024, 2**31 - 1))
    yield _send(world, rng, topic, queue)
    yield request(C.PULL_MESSAGE, world, rng, topic=topic, queueId=str(queue),
                  queueOffset="0", sysFlag="0", suspendTimeoutMillis="0")  # fmt: skip


def register_then_route(world: World, rng: random.Random) -> Case:
    """A made-up broker registers a topic table at the name server; its route is read."""
    reg = request(C.REGISTER_BROKER, world, rng)
    yield reg
    yield request(C.GET_ROUTEINFO_BY_TOPIC, world, rng, topic=rng.choice(bodies.NS_TOPICS))
    if rng.random() < 0.3:
        names = ("brokerName", "brokerAddr", "clusterName", "brokerId")
        same = {k: v for k, v in reg.req.ext.items() if k in names}
        yield request(C.UNREGISTER_BROKER, world, rng, **same)


def kv_round_trip(world: World, rng: random.Random) -> Case:
    put = request(C.PUT_KV_CONFIG, world, rng)
    yield put
    keys = {k: v for k, v in put.req.ext.items() if k in ("namespace", "key")}
    yield request(C.GET_KV_CONFIG, world, rng, **keys)
    yield request(C.GET_KVLIST_BY_NAMESPACE, world, rng, **keys)
    yield request(C.DELETE_KV_CONFIG, world, rng, **keys)


def offsets_round_trip(world: World, rng: random.Random) -> Case:
    update = request(C.UPDATE_CONSUMER_OFFSET, world, rng)
    yield update
    keys = {k: v for k, v in update.req.ext.items() if k in ("consumerGroup", "topic", "queueId")}
    yield request(C.QUERY_CONSUMER_OFFSET, world, rng, **keys)


def lock_unlock(world: World, rng: random.Random) -> Case:
    lock = request(C.LOCK_BATCH_MQ, world, rng)
    yield lock
    yield Step(Req(C.UNLOCK_BATCH_MQ, {}, lock.req.body, lock.req.stype), ["body"])


ADMIN_READS: Final = (
    C.GET_CONSUME_STATS, C.GET_TOPIC_STATS_INFO, C.QUERY_TOPIC_CONSUME_BY_WHO,
    C.INVOKE_BROKER_TO_RESET_OFFSET, C.GET_MAX_OFFSET, C.PULL_MESSAGE, C.QUERY_CONSUMER_OFFSET,
    C.UPDATE_CONSUMER_OFFSET, C.SEARCH_OFFSET_BY_TIMESTAMP,
)  # fmt: skip
QUEUE_COUNTS: Final = (0, 1, 8, 16, 1024, 65535, 65536, 2**31 - 1)


def topic_then_admin(world: World, rng: random.Random) -> Case:
    """A topic made with many (or no) queues, then what admins and consumers ask of it: each
    of these walks the topic's queues somewhere."""
    topic = f"FuzzQ{rng.randrange(4)}"
    counts = {k: str(rng.choices(QUEUE_COUNTS, (8, 8, 8, 4, 4, 2, 2, 0.25))[0])
              for k in ("readQueueNums", "writeQueueNums")}  # fmt: skip
    yield request(C.UPDATE_AND_CREATE_TOPIC, world, rng, topic=topic, perm="6", **counts)
    for code in rng.sample(ADMIN_READS, 2):
        group = rng.choice(world.groups)
        fixed = {"topic": topic, "consumerGroup": group, "group": group}
        yield request(code, world, rng, **fixed)


BROKER_SEQUENCES: Final = (group_then_heartbeat, send_then_send_back, topic_send_pull,
                           offsets_round_trip, lock_unlock, topic_then_admin)  # fmt: skip
NAMESRV_SEQUENCES: Final = (register_then_route, kv_round_trip)


def choose(server: str, rng: random.Random) -> tuple[str, Callable[[World, random.Random], Case]]:
    """(case name, case) for ``server``: a sequence now and then, else one request of a code
    the server serves (mostly), of another known code, or of no known code."""
    codes = [int(c) for c in C]
    if server == "broker":
        if rng.random() < 0.25:
            case = rng.choice(BROKER_SEQUENCES)
            return case.__name__, case
        pool = [*(c for c in codes if c in HEADERS and c not in NAMESRV_CODES)] * 3
        pool += [c for c in codes if c not in HEADERS] * 1 + list(UNKNOWN_CODES)
        pool += [C.HEART_BEAT, C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, C.UPDATE_BROKER_CONFIG] * 6
        pool += [C.LOCK_BATCH_MQ, C.SEND_BATCH_MESSAGE, C.GET_ALL_CONSUMER_OFFSET] * 2
    else:
        if rng.random() < 0.25:
            case = rng.choice(NAMESRV_SEQUENCES)
            return case.__name__, case
        pool = [c for c in codes if c in NAMESRV_CODES] * 12 + [*JAVA_ONLY_CODES] * 2
        pool += [C.REGISTER_BROKER, C.QUERY_DATA_VERSION] * 12
        if rng.random() < 0.05:  # never answered: each costs the wait for no answer
            pool = [c for c in codes if namesrv_silent(c)] + list(UNKNOWN_CODES)
    code = rng.choice(pool)
    return f"single {C(code).name if code in C._value2member_map_ else code}", single(code)


def dump(steps: list[Step]) -> str:
    """A reproducer: each request as one JSON line."""
    return "\n".join(json.dumps(s.req.show(), ensure_ascii=True) for s in steps)


def crc(body: bytes) -> str:
    return str(zlib.crc32(body) & 0x7FFFFFFF)
