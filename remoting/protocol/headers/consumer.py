"""Pull, offset and consumer-management headers (protocol.md 5.2-5.5, 5.8)."""

from __future__ import annotations

from dataclasses import dataclass, field

from aiorocketmq.remoting.protocol.headers.base import Header, Int32, fast_init, wire


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class PullMessageRequestHeader(Header):
    consumer_group: str = field(metadata=wire("consumerGroup"))
    topic: str = field(metadata=wire("topic"))
    queue_id: Int32 = field(metadata=wire("queueId"))
    queue_offset: int = field(metadata=wire("queueOffset"))
    max_msg_nums: Int32 = field(metadata=wire("maxMsgNums"))
    sys_flag: Int32 = field(metadata=wire("sysFlag"))
    commit_offset: int = field(metadata=wire("commitOffset"))
    suspend_timeout_millis: int = field(metadata=wire("suspendTimeoutMillis"))
    subscription: str | None = field(default=None, metadata=wire("subscription"))
    sub_version: int = field(metadata=wire("subVersion"))
    expression_type: str | None = field(default=None, metadata=wire("expressionType"))
    max_msg_bytes: Int32 | None = field(default=None, metadata=wire("maxMsgBytes"))


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class PullMessageResponseHeader(Header):
    """ali-ons does arithmetic on all four for every status: always send them."""

    suggest_which_broker_id: int = field(metadata=wire("suggestWhichBrokerId"))
    next_begin_offset: int = field(metadata=wire("nextBeginOffset"))
    min_offset: int = field(metadata=wire("minOffset"))
    max_offset: int = field(metadata=wire("maxOffset"))


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueOffsetRequestHeader(Header):
    """QUERY_CONSUMER_OFFSET (14); 5.x adds setZeroIfNotFound."""

    consumer_group: str = field(metadata=wire("consumerGroup"))
    topic: str = field(metadata=wire("topic"))
    queue_id: Int32 = field(metadata=wire("queueId"))
    set_zero_if_not_found: bool | None = field(default=None, metadata=wire("setZeroIfNotFound"))


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateConsumerOffsetRequestHeader(Header):
    consumer_group: str = field(metadata=wire("consumerGroup"))
    topic: str = field(metadata=wire("topic"))
    queue_id: Int32 = field(metadata=wire("queueId"))
    commit_offset: int = field(metadata=wire("commitOffset"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupHeader(Header):
    """GET_CONSUMER_LIST_BY_GROUP (38), GET_CONSUMER_CONNECTION_LIST (203),
    NOTIFY_CONSUMER_IDS_CHANGED (40)."""

    consumer_group: str = field(metadata=wire("consumerGroup"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerGroupHeader(Header):
    """GET_PRODUCER_CONNECTION_LIST (204)."""

    producer_group: str = field(metadata=wire("producerGroup"))


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterClientRequestHeader(Header):
    client_id: str = field(metadata=wire("clientID"))
    producer_group: str | None = field(default=None, metadata=wire("producerGroup"))
    consumer_group: str | None = field(default=None, metadata=wire("consumerGroup"))


@dataclass(frozen=True, slots=True, kw_only=True)
class SendMsgBackRequestHeader(Header):
    """CONSUMER_SEND_MSG_BACK (36)."""

    offset: int = field(metadata=wire("offset"))
    group: str = field(metadata=wire("group"))
    delay_level: Int32 = field(metadata=wire("delayLevel"))
    origin_msg_id: str | None = field(default=None, metadata=wire("originMsgId"))
    origin_topic: str | None = field(default=None, metadata=wire("originTopic"))
    unit_mode: bool = field(default=False, metadata=wire("unitMode"))
    max_reconsume_times: Int32 | None = field(default=None, metadata=wire("maxReconsumeTimes"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumeStatsRequestHeader(Header):
    """GET_CONSUME_STATS (208): every subscribed topic when ``topic`` is absent."""

    consumer_group: str = field(metadata=wire("consumerGroup"))
    topic: str | None = field(default=None, metadata=wire("topic"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ResetOffsetRequestHeader(Header):
    """INVOKE_BROKER_TO_RESET_OFFSET (222) and RESET_CONSUMER_CLIENT_OFFSET (220)."""

    topic: str = field(metadata=wire("topic"))
    group: str = field(metadata=wire("group"))
    timestamp: int = field(metadata=wire("timestamp"))
    is_force: bool = field(default=False, metadata=wire("isForce"))


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteGroupRequestHeader(Header):
    """DELETE_SUBSCRIPTIONGROUP (207); 4.9.8 also removeOffset."""

    group_name: str = field(metadata=wire("groupName"))
    remove_offset: bool = field(default=False, metadata=wire("removeOffset"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerRunningInfoRequestHeader(Header):
    """GET_CONSUMER_RUNNING_INFO (307), admin -> broker -> client."""

    consumer_group: str = field(metadata=wire("consumerGroup"))
    client_id: str = field(metadata=wire("clientId"))
    jstack_enable: bool = field(default=False, metadata=wire("jstackEnable"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumeMessageDirectlyRequestHeader(Header):
    """CONSUME_MESSAGE_DIRECTLY (309): ``msgId`` is an offsetMsgId; the broker adds
    ``brokerName`` and the stored record before forwarding it to the client."""

    consumer_group: str = field(metadata=wire("consumerGroup"))
    client_id: str | None = field(default=None, metadata=wire("clientId"))
    msg_id: str | None = field(default=None, metadata=wire("msgId"))
    broker_name: str | None = field(default=None, metadata=wire("brokerName"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerStatusRequestHeader(Header):
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223, with ``clientAddr``: a client id) and
    GET_CONSUMER_STATUS_FROM_CLIENT (221, without)."""

    topic: str = field(metadata=wire("topic"))
    group: str = field(metadata=wire("group"))
    client_addr: str | None = field(default=None, metadata=wire("clientAddr"))
