"""The request layer (Java's MQClientAPIImpl): every request the SDK, mqadmin, tests,
benchmarks and examples send, as typed builders, parsers for the responses, and ``Remote``,
the SDK's one edge to the network. Public as ``aiorocketmq.client.api``.

Builders return a RemotingCommand ready for ``Remote.invoke``; requests say they come from a
4.9.8 client (``version``), as the brokers' behaviour depends on it. Parsers raise
MQBrokerError for a refusal (``retriable`` as Java's producer decides). ``Remote`` raises
MQConnectionError and MQTimeoutError where the remoting layer raises its RemotingError: no
RemotingError leaves the SDK.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from aiorocketmq.client.core.errors import MQBrokerError, MQClientError, translate
from aiorocketmq.client.core.security import Security, Tls
from aiorocketmq.remoting.channel import Channel
from aiorocketmq.remoting.client import DEFAULT_TIMEOUT, Listener, RemotingClient
from aiorocketmq.remoting.config import ClientConfig
from aiorocketmq.remoting.errors import RemotingError
from aiorocketmq.remoting.protocol import fastjson
from aiorocketmq.remoting.protocol.codes import RequestCode as C
from aiorocketmq.remoting.protocol.codes import ResponseCode as R
from aiorocketmq.remoting.protocol.command import RemotingCommand
from aiorocketmq.remoting.protocol.headers.admin import (
    CreateTopicRequestHeader,
    SearchOffsetRequestHeader,
)
from aiorocketmq.remoting.protocol.headers.base import Header
from aiorocketmq.remoting.protocol.headers.consumer import (
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueueOffsetRequestHeader,
    SendMsgBackRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from aiorocketmq.remoting.protocol.headers.send import SendMessageHeader, SendMessageResponseHeader
from aiorocketmq.remoting.protocol.heartbeat import (
    CheckClientBody,
    ConsumerData,
    HeartbeatData,
    LockBatchBody,
    MessageQueue,
    SubscriptionData,
)
from aiorocketmq.remoting.protocol.message import MessageExt, decode_records, encode_properties
from aiorocketmq.remoting.protocol.route import TopicRouteData
from aiorocketmq.remoting.protocol.timer import (
    RecallMessageRequestHeader,
    RecallMessageResponseHeader,
)

__all__ = [
    "AUTO_CREATE_TOPIC",
    "DEFAULT_TOPIC_QUEUE_NUMS",
    "FLAG_CLASS_FILTER",
    "FLAG_COMMIT_OFFSET",
    "FLAG_SUBSCRIPTION",
    "FLAG_SUSPEND",
    "PullReply",
    "PullStatus",
    "Remote",
    "SendReply",
    "SendStatus",
    "all_topics",
    "check_client_config",
    "consumer_list",
    "create_topic",
    "get_route",
    "heartbeat",
    "lock_batch",
    "now_ms",
    "parse_consumer_list",
    "parse_locked",
    "parse_offset",
    "parse_pull",
    "parse_recall",
    "parse_route",
    "parse_send",
    "parse_topic_list",
    "pull_message",
    "query_consumer_offset",
    "queue_request",
    "recall_message",
    "request",
    "search_offset",
    "send_back",
    "send_ids",
    "send_message",
    "send_status",
    "unlock_batch",
    "unregister_client",
    "update_consumer_offset",
    "view_message",
]

AUTO_CREATE_TOPIC: str = "TBW102"  # TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC
DEFAULT_TOPIC_QUEUE_NUMS: int = 4  # DefaultMQProducer.defaultTopicQueueNums


def request(
    code: int, header: Header | Mapping[str, str] | None = None, body: bytes = b""
) -> RemotingCommand:
    """Any request: ``code`` with ``header`` (a typed header or the raw ext fields)."""
    ext = header.to_ext() if isinstance(header, Header) else dict(header or {})
    return RemotingCommand.request(code, ext, body)


def now_ms() -> int:
    """Wall-clock milliseconds, as Java's System.currentTimeMillis."""
    return time.time_ns() // 1_000_000


Status = TypeVar("Status", bound=enum.Enum)


class Remote:
    """A RemotingClient behind the SDK's edge: ``invoke`` and ``invoke_oneway`` raise
    MQTimeoutError, MQConnectionError (``retriable``) or MQClientError, the RemotingError as
    their ``__cause__`` (MQClientAPIImpl turns RemotingException into MQClientException's
    callers' view the same way). Every SDK call to a server goes through one."""

    def __init__(self, client: RemotingClient) -> None:
        self.client = client
        # ours: told of each address a request failed at (a connection error, a timeout, a
        # SERVICE_NOT_AVAILABLE answer: a slave or a stopping broker) -- the ClientInstance
        # fetches the routes through that broker again at once (issue 35 item 3)
        self.failed: Listener | None = None

    @classmethod
    def open(
        cls,
        config: ClientConfig | None = None,
        *,
        access_key: str | None = None,
        secret_key: str | None = None,
        security_token: str | None = None,
        tls: Tls = None,
    ) -> Remote:
        """A Remote over a new RemotingClient (connections open on first use). The security
        keywords are the client classes': ``access_key``/``secret_key`` (and
        ``security_token``) sign every request (ACL 1.0); ``tls=True`` is TLS verifying
        nothing (Apache's client default), or pass an ``ssl.SSLContext``."""
        sec = Security.from_keywords(access_key, secret_key, security_token, tls)
        return cls(RemotingClient(config, credentials=sec.credentials, tls=sec.tls))

    async def invoke(
        self, addr: str, request: RemotingCommand, timeout: float = DEFAULT_TIMEOUT
    ) -> RemotingCommand:
        """``request`` to ``addr`` ("host:port"); the response, whatever its code."""
        try:
            resp = await self.client.invoke(addr, request, timeout)
        except RemotingError as exc:
            if self.failed is not None:
                self.failed(addr)
            raise translate(exc, addr)  # noqa: B904 -- its __cause__ is exc
        if resp.code == R.SERVICE_NOT_AVAILABLE and self.failed is not None:
            self.failed(addr)
        return resp

    async def invoke_many(
        self, addr: str, requests: list[RemotingCommand], timeout: float = DEFAULT_TIMEOUT
    ) -> list[RemotingCommand | MQClientError]:
        """``requests`` to ``addr``, all written before any is awaited
        (RemotingClient.invoke_many); per request its response, whatever its code, or the
        error ``invoke`` would raise."""
        answers = await self.client.invoke_many(addr, requests, timeout)
        return [translate(a, addr) if isinstance(a, RemotingError) else a for a in answers]

    async def invoke_oneway(
        self, addr: str, request: RemotingCommand, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        """``request`` to ``addr`` as oneway: returns once written."""
        try:
            await self.client.invoke_oneway(addr, request, timeout)
        except RemotingError as exc:
            if self.failed is not None:
                self.failed(addr)
            raise translate(exc, addr)  # noqa: B904 -- its __cause__ is exc

    def add_connect_listener(self, listener: Listener) -> None:
        self.client.add_connect_listener(listener)

    def add_close_listener(self, listener: Listener) -> None:
        self.client.add_close_listener(listener)

    def channel(self, addr: str) -> Channel | None:
        return self.client.channel(addr)

    def close_channel(self, addr: str) -> None:
        self.client.close_channel(addr)

    async def close(self) -> None:
        await self.client.close()


def _status(kind: type[Status], resp: RemotingCommand, broker_addr: str) -> Status:
    """The response code as one of ``kind``'s statuses, else the broker's refusal."""
    try:
        return kind(resp.code)
    except ValueError:
        raise MQBrokerError(resp.code, resp.remark, broker_addr) from None


# ------------------------------------------------------------------ sending


def send_message(
    topic: str,
    body: bytes,
    *,
    group: str,
    properties: Mapping[str, str] | str = "",
    queue_id: int = -1,
    sys_flag: int = 0,
    flag: int = 0,
    born_timestamp: int | None = None,
    default_topic_queue_nums: int = 4,
    reconsume_times: int | None = None,
    max_reconsume_times: int | None = None,
    unit_mode: bool = False,
    batch: bool = False,
    v2: bool = True,
    reply: bool = False,
) -> RemotingCommand:
    """SEND_MESSAGE_V2 (310, one-letter keys, what 4.9.8 producers send) or SEND_MESSAGE (10);
    with ``batch``, SEND_BATCH_MESSAGE (320) of a body made by ``encode_batch``; with
    ``reply``, a request's reply: SEND_REPLY_MESSAGE_V2 (325) or SEND_REPLY_MESSAGE (324)
    (MQClientAPIImpl.sendMessage: a message whose MSG_TYPE is "reply")."""
    props = properties if isinstance(properties, str) else encode_properties(dict(properties))
    born = str(time.time_ns() // 1_000_000 if born_timestamp is None else born_timestamp)
    if not (v2 or batch):
        header = SendMessageHeader(
            producer_group=group,
            topic=topic,
            default_topic=AUTO_CREATE_TOPIC,
            default_topic_queue_nums=default_topic_queue_nums,
            queue_id=queue_id,
            sys_flag=sys_flag,
            born_timestamp=int(born),
            flag=flag,
            properties=props,
            reconsume_times=reconsume_times,
            unit_mode=unit_mode,
            max_reconsume_times=max_reconsume_times,
        )
        code = C.SEND_REPLY_MESSAGE if reply else C.SEND_MESSAGE
        return RemotingCommand.request(code, header.to_ext(), body)
    # SendMessageRequestHeaderV2's one-letter keys, built directly: this is every send's cost
    ext = {
        "a": group,
        "b": topic,
        "c": AUTO_CREATE_TOPIC,
        "d": str(default_topic_queue_nums),
        "e": str(queue_id),
        "f": str(sys_flag),
        "g": born,
        "h": str(flag),
        "i": props,
        "j": str(reconsume_times or 0),
        "k": "true" if unit_mode else "false",
        "m": "true" if batch else "false",
    }
    if max_reconsume_times is not None:
        ext["l"] = str(max_reconsume_times)
    code = C.SEND_BATCH_MESSAGE if batch else C.SEND_MESSAGE_V2
    if reply:
        code = C.SEND_REPLY_MESSAGE_V2
    return RemotingCommand.request(code, ext, body)


class SendStatus(enum.Enum):
    """SendStatus: stored, but a flush or a slave did not confirm in time."""

    SEND_OK = R.SUCCESS
    FLUSH_DISK_TIMEOUT = R.FLUSH_DISK_TIMEOUT
    FLUSH_SLAVE_TIMEOUT = R.FLUSH_SLAVE_TIMEOUT
    SLAVE_NOT_AVAILABLE = R.SLAVE_NOT_AVAILABLE


@dataclass(frozen=True, slots=True)
class SendReply:
    status: SendStatus
    offset_msg_id: str  # the broker's msgId: store host + CommitLog offset
    queue_id: int
    queue_offset: int
    transaction_id: str | None
    region: str | None
    trace_on: bool


def parse_send(resp: RemotingCommand, broker_addr: str = "") -> SendReply:
    """MQClientAPIImpl.processSendResponse: the four stored statuses, else MQBrokerError."""
    status = send_status(resp, broker_addr)
    ext = resp.ext_fields
    offset_msg_id, queue_id, queue_offset = send_ids(ext)
    return SendReply(status, offset_msg_id, queue_id, queue_offset, ext.get("transactionId"),
                     ext.get("MSG_REGION"), ext.get("TRACE_ON") != "false")  # fmt: skip


_SEND_STATUSES: dict[int, SendStatus] = {s.value: s for s in SendStatus}


def send_status(resp: RemotingCommand, broker_addr: str = "") -> SendStatus:
    """The SendStatus of a send's response code, else the broker's refusal (MQBrokerError)."""
    status = _SEND_STATUSES.get(resp.code)
    if status is None:
        raise MQBrokerError(resp.code, resp.remark, broker_addr)
    return status


def send_ids(ext: Mapping[str, str]) -> tuple[str, int, int]:
    """(msgId, queueId, queueOffset) of SendMessageResponseHeader, every send's: short ASCII
    digits (so within int32 / int64) at once, else by the typed header (and its errors)."""
    msg_id, qid, qoff = ext.get("msgId"), ext.get("queueId", ""), ext.get("queueOffset", "")
    short, digits = 0 < len(qid) < 10 and 0 < len(qoff) < 19, qid + qoff
    if msg_id is not None and short and digits.isdigit() and digits.isascii():
        return msg_id, int(qid), int(qoff)
    hdr = SendMessageResponseHeader.from_ext(ext)
    return hdr.msg_id, hdr.queue_id, hdr.queue_offset


def recall_message(group: str, topic: str, recall_handle: str, broker_name: str) -> RemotingCommand:
    """RECALL_MESSAGE (370, 5.x): cancel a timer message still waiting, by the handle its
    send's reply carried (MQClientAPIImpl.recallMessage, RecallMessageRequestHeader; ``bname``
    is RpcRequestHeader's brokerName, the handle's broker)."""
    header = RecallMessageRequestHeader(
        producer_group=group, topic=topic, recall_handle=recall_handle, bname=broker_name
    )
    return RemotingCommand.request(C.RECALL_MESSAGE, header.to_ext())


def parse_recall(resp: RemotingCommand, broker_addr: str = "") -> str:
    """The recalled message's id (RecallMessageResponseHeader.msgId), else the broker's
    refusal (MQBrokerError)."""
    if resp.code != R.SUCCESS:
        raise MQBrokerError(resp.code, resp.remark, broker_addr)
    return RecallMessageResponseHeader.from_ext(resp.ext_fields).msg_id


# ------------------------------------------------------------------ pulling


class PullStatus(enum.Enum):
    """PullStatus: FOUND (messages), NO_NEW_MSG, NO_MATCHED_MSG (none passed the filter),
    OFFSET_ILLEGAL (the offset is outside the queue: see ``next_begin_offset``)."""

    FOUND = R.SUCCESS
    NO_NEW_MSG = R.PULL_NOT_FOUND
    NO_MATCHED_MSG = R.PULL_RETRY_IMMEDIATELY
    OFFSET_ILLEGAL = R.PULL_OFFSET_MOVED


# PullSysFlag bits
FLAG_COMMIT_OFFSET, FLAG_SUSPEND, FLAG_SUBSCRIPTION, FLAG_CLASS_FILTER = 1, 2, 4, 8


def pull_message(
    group: str,
    topic: str,
    queue_id: int,
    offset: int,
    *,
    max_nums: int = 32,
    sys_flag: int = FLAG_SUSPEND,
    commit_offset: int = 0,
    suspend_ms: int = 15_000,
    subscription: str | None = None,
    sub_version: int = 0,
    expression_type: str | None = None,
    bulk: bool = False,
) -> RemotingCommand:
    """PULL_MESSAGE (11). The broker reads ``subscription`` only with FLAG_SUBSCRIPTION in
    ``sys_flag`` (lite pull, no heartbeat), as PullSysFlag.buildSysFlag leaves it to the caller.
    ``bulk``: ours, the ext field ``bulkPull=true`` (our brokers serve up to ``max_nums`` from
    memory within their byte cap; Apache's ignore it)."""
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=max_nums,
        sys_flag=sys_flag,
        commit_offset=commit_offset,
        suspend_timeout_millis=suspend_ms,
        subscription=subscription,
        sub_version=sub_version,
        expression_type=expression_type,
        bulk_pull=True if bulk else None,
    )
    return request(C.PULL_MESSAGE, header)


def pull_template(
    group: str,
    topic: str,
    *,
    sys_flag: int,
    suspend_ms: int,
    subscription: str | None,
    expression_type: str | None,
    bulk: bool = False,
) -> dict[str, str]:
    """The ext fields of ``pull_message`` but for the queue, offset and count, which
    ``pull_from`` fills in: a reader pulling the same topic again and again builds the
    typed header once (it costs more than the rest of a pull's request)."""
    return pull_message(
        group, topic, 0, 0, max_nums=0, sys_flag=sys_flag, suspend_ms=suspend_ms,
        subscription=subscription, expression_type=expression_type, bulk=bulk,
    ).ext_fields  # fmt: skip


def pull_from(
    template: dict[str, str], queue_id: int, offset: int, max_nums: int
) -> RemotingCommand:
    """PULL_MESSAGE of a ``pull_template``: the ext fields ``pull_message`` gives, in its
    order (the template's keys are all there), from a copy of the template."""
    ext = template.copy()
    ext["queueId"] = str(queue_id)
    ext["queueOffset"] = str(offset)
    ext["maxMsgNums"] = str(max_nums)
    return RemotingCommand.request(C.PULL_MESSAGE, ext)


@dataclass(frozen=True, slots=True)
class PullReply:
    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    suggest_which_broker_id: int
    body: bytes

    def messages(self) -> list[MessageExt]:
        return decode_records(self.body) if self.status is PullStatus.FOUND else []


def parse_pull(resp: RemotingCommand, broker_addr: str = "") -> PullReply:
    """MQClientAPIImpl.processPullResponse: the four pull statuses, else MQBrokerError."""
    status = _status(PullStatus, resp, broker_addr)
    hdr = PullMessageResponseHeader.from_ext(resp.ext_fields)
    return PullReply(
        status=status,
        next_begin_offset=hdr.next_begin_offset,
        min_offset=hdr.min_offset,
        max_offset=hdr.max_offset,
        suggest_which_broker_id=hdr.suggest_which_broker_id,
        body=resp.body,
    )


# ------------------------------------------------------------------ clients and groups


def heartbeat(
    client_id: str, *, producers: Iterable[str] = (), consumers: Iterable[ConsumerData] = ()
) -> RemotingCommand:
    """HEART_BEAT (34): the client's producer groups and consumer groups."""
    data = HeartbeatData(client_id=client_id, producers=list(producers), consumers=list(consumers))
    return request(C.HEART_BEAT, None, data.encode())


def check_client_config(client_id: str, group: str, sub: SubscriptionData) -> RemotingCommand:
    """CHECK_CLIENT_CONFIG (46): can the broker filter by ``sub`` (checkClientInBroker)."""
    body = CheckClientBody(client_id=client_id, group=group, subscription=sub)
    return request(C.CHECK_CLIENT_CONFIG, None, body.encode())


def unregister_client(
    client_id: str, *, producer_group: str | None = None, consumer_group: str | None = None
) -> RemotingCommand:
    header = UnregisterClientRequestHeader(
        client_id=client_id, producer_group=producer_group, consumer_group=consumer_group
    )
    return request(C.UNREGISTER_CLIENT, header)


def query_consumer_offset(group: str, topic: str, queue_id: int) -> RemotingCommand:
    header = QueueOffsetRequestHeader(consumer_group=group, topic=topic, queue_id=queue_id)
    return request(C.QUERY_CONSUMER_OFFSET, header)


def update_consumer_offset(group: str, topic: str, queue_id: int, offset: int) -> RemotingCommand:
    header = UpdateConsumerOffsetRequestHeader(
        consumer_group=group, topic=topic, queue_id=queue_id, commit_offset=offset
    )
    return request(C.UPDATE_CONSUMER_OFFSET, header)


def consumer_list(group: str) -> RemotingCommand:
    """GET_CONSUMER_LIST_BY_GROUP (38)."""
    return request(C.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group})


def parse_consumer_list(resp: RemotingCommand, broker_addr: str = "") -> list[str]:
    """The group's client ids (``consumerIdList``), else MQBrokerError."""
    if resp.code != R.SUCCESS:
        raise MQBrokerError(resp.code, resp.remark, broker_addr)
    return [str(c) for c in fastjson.loads(resp.body).get("consumerIdList") or []]


def lock_batch(group: str, client_id: str, queues: Iterable[MessageQueue]) -> RemotingCommand:
    """LOCK_BATCH_MQ (41): the answer's ``lockOKMQSet`` are the queues now held."""
    body = LockBatchBody(consumer_group=group, client_id=client_id, mq_set=sorted(queues))
    return request(C.LOCK_BATCH_MQ, None, body.encode())


def parse_locked(resp: RemotingCommand, broker_addr: str = "") -> set[MessageQueue]:
    if resp.code != R.SUCCESS:
        raise MQBrokerError(resp.code, resp.remark, broker_addr)
    obj = fastjson.loads(resp.body) if resp.body else {}
    return {MessageQueue.from_json(m) for m in obj.get("lockOKMQSet") or []}


def unlock_batch(group: str, client_id: str, queues: Iterable[MessageQueue]) -> RemotingCommand:
    """UNLOCK_BATCH_MQ (42)."""
    body = LockBatchBody(consumer_group=group, client_id=client_id, mq_set=sorted(queues))
    return request(C.UNLOCK_BATCH_MQ, None, body.encode())


def send_back(
    commit_log_offset: int,
    group: str,
    delay_level: int,
    *,
    origin_msg_id: str,
    origin_topic: str,
    max_reconsume_times: int,
) -> RemotingCommand:
    """CONSUMER_SEND_MSG_BACK (36): the broker re-sends the stored message to the group's
    retry topic (or its DLQ) through the delay levels."""
    header = SendMsgBackRequestHeader(
        offset=commit_log_offset,
        group=group,
        delay_level=delay_level,
        origin_msg_id=origin_msg_id,
        origin_topic=origin_topic,
        unit_mode=False,
        max_reconsume_times=max_reconsume_times,
    )
    return request(C.CONSUMER_SEND_MSG_BACK, header)


def search_offset(topic: str, queue_id: int, timestamp_ms: int) -> RemotingCommand:
    """SEARCH_OFFSET_BY_TIMESTAMP (29): answered by ``parse_offset``."""
    header = SearchOffsetRequestHeader(topic=topic, queue_id=queue_id, timestamp=timestamp_ms)
    return request(C.SEARCH_OFFSET_BY_TIMESTAMP, header)


# ------------------------------------------------------------------ routes, topics, offsets


def all_topics() -> RemotingCommand:
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206), to a name server."""
    return request(C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)


def parse_topic_list(resp: RemotingCommand, addr: str = "") -> list[str]:
    """TopicList ``topicList``, else MQBrokerError."""
    if resp.code != R.SUCCESS:
        raise MQBrokerError(resp.code, resp.remark, addr)
    return sorted(str(t) for t in fastjson.loads(resp.body).get("topicList") or [])


def get_route(topic: str) -> RemotingCommand:
    """GET_ROUTEINFO_BY_TOPIC (105), to a name server."""
    return request(C.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})


def parse_route(resp: RemotingCommand, namesrv_addr: str = "") -> TopicRouteData:
    """The route (fastjson-tolerant), else MQBrokerError (TOPIC_NOT_EXIST when unknown)."""
    if resp.code != R.SUCCESS:
        raise MQBrokerError(resp.code, resp.remark, namesrv_addr)
    return TopicRouteData.decode(resp.body)


def create_topic(
    topic: str,
    queues: int = 4,
    perm: int = 6,
    *,
    read_queues: int | None = None,
    order: bool = False,
    topic_sys_flag: int = 0,
) -> RemotingCommand:
    """UPDATE_AND_CREATE_TOPIC (17), to a broker (mqadmin updateTopic)."""
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic=AUTO_CREATE_TOPIC,
        read_queue_nums=queues if read_queues is None else read_queues,
        write_queue_nums=queues,
        perm=perm,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=topic_sys_flag,
        order=order,
    )
    return request(C.UPDATE_AND_CREATE_TOPIC, header)


def queue_request(code: int, topic: str, queue_id: int) -> RemotingCommand:
    """GET_MAX_OFFSET (30), GET_MIN_OFFSET (31), GET_EARLIEST_MSG_STORETIME (32)."""
    return request(code, {"topic": topic, "queueId": str(queue_id)})


def view_message(commit_log_offset: int) -> RemotingCommand:
    """VIEW_MESSAGE_BY_ID (33): the record at a CommitLog offset (from an offsetMsgId)."""
    return request(C.VIEW_MESSAGE_BY_ID, {"offset": str(commit_log_offset)})


def parse_offset(resp: RemotingCommand, broker_addr: str = "") -> int:
    """The ``offset`` of a 14/29/30/31 response, else MQBrokerError."""
    if resp.code != R.SUCCESS:
        raise MQBrokerError(resp.code, resp.remark, broker_addr)
    return int(resp.ext_fields["offset"])
