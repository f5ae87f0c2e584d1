"""Pull, offset and consumer-management headers (protocol.md 5.2-5.5, 5.8)."""

from __future__ import annotations

from dataclasses import field

from aiorocketmq.remoting.protocol.headers.base import Header, Int32, header, wire


@header
class PullMessageRequestHeader(Header):
    """PULL_MESSAGE (11)."""

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
    # ours, beyond 4.9.8 and 5.x (issue 34, the Spark source's reads): ``bulkPull=true`` lets
    # our broker serve up to maxMsgNums messages from memory within its byte cap
    # (maxTransferBytesOnMessageInMemory), not maxTransferCountOnMessageInMemory's 32;
    # Apache's brokers ignore the field and answer as to any pull
    bulk_pull: bool | None = field(default=None, metadata=wire("bulkPull"))


@header
class PullMessageResponseHeader(Header):
    """ali-ons does arithmetic on all four for every status: always send them."""

    suggest_which_broker_id: int = field(metadata=wire("suggestWhichBrokerId"))
    next_begin_offset: int = field(metadata=wire("nextBeginOffset"))
    min_offset: int = field(metadata=wire("minOffset"))
    max_offset: int = field(metadata=wire("maxOffset"))


@header
class QueueOffsetRequestHeader(Header):
    """QUERY_CONSUMER_OFFSET (14); 5.x adds setZeroIfNotFound."""

    consumer_group: str = field(metadata=wire("consumerGroup"))
    topic: str = field(metadata=wire("topic"))
    queue_id: Int32 = field(metadata=wire("queueId"))
    set_zero_if_not_found: bool | None = field(default=None, metadata=wire("setZeroIfNotFound"))


@header
class UpdateConsumerOffsetRequestHeader(Header):
    """UPDATE_CONSUMER_OFFSET (15)."""

    consumer_group: str = field(metadata=wire("consumerGroup"))
    topic: str = field(metadata=wire("topic"))
    queue_id: Int32 = field(metadata=wire("queueId"))
    commit_offset: int = field(metadata=wire("commitOffset"))


@header
class ConsumerGroupHeader(Header):
    """GET_CONSUMER_LIST_BY_GROUP (38), GET_CONSUMER_CONNECTION_LIST (203),
    NOTIFY_CONSUMER_IDS_CHANGED (40)."""

    consumer_group: str = field(metadata=wire("consumerGroup"))


@header
class ProducerGroupHeader(Header):
    """GET_PRODUCER_CONNECTION_LIST (204)."""

    producer_group: str = field(metadata=wire("producerGroup"))


@header
class UnregisterClientRequestHeader(Header):
    """UNREGISTER_CLIENT (35)."""

    client_id: str = field(metadata=wire("clientID"))
    producer_group: str | None = field(default=None, metadata=wire("producerGroup"))
    consumer_group: str | None = field(default=None, metadata=wire("consumerGroup"))


@header
class SendMsgBackRequestHeader(Header):
    """CONSUMER_SEND_MSG_BACK (36)."""

    offset: int = field(metadata=wire("offset"))
    group: str = field(metadata=wire("group"))
    delay_level: Int32 = field(metadata=wire("delayLevel"))
    origin_msg_id: str | None = field(default=None, metadata=wire("originMsgId"))
    origin_topic: str | None = field(default=None, metadata=wire("originTopic"))
    unit_mode: bool = field(default=False, metadata=wire("unitMode"))
    max_reconsume_times: Int32 | None = field(default=None, metadata=wire("maxReconsumeTimes"))


@header
class ConsumeStatsRequestHeader(Header):
    """GET_CONSUME_STATS (208): every subscribed topic when ``topic`` is absent."""

    consumer_group: str = field(metadata=wire("consumerGroup"))
    topic: str | None = field(default=None, metadata=wire("topic"))


@header
class ResetOffsetRequestHeader(Header):
    """INVOKE_BROKER_TO_RESET_OFFSET (222) and RESET_CONSUMER_CLIENT_OFFSET (220)."""

    topic: str = field(metadata=wire("topic"))
    group: str = field(metadata=wire("group"))
    timestamp: int = field(metadata=wire("timestamp"))
    is_force: bool = field(default=False, metadata=wire("isForce"))


@header
class DeleteGroupRequestHeader(Header):
    """DELETE_SUBSCRIPTIONGROUP (207); 4.9.8 also removeOffset."""

    group_name: str = field(metadata=wire("groupName"))
    remove_offset: bool = field(default=False, metadata=wire("removeOffset"))


@header
class ConsumerRunningInfoRequestHeader(Header):
    """GET_CONSUMER_RUNNING_INFO (307), admin -> broker -> client."""

    consumer_group: str = field(metadata=wire("consumerGroup"))
    client_id: str = field(metadata=wire("clientId"))
    jstack_enable: bool = field(default=False, metadata=wire("jstackEnable"))


@header
class ConsumeMessageDirectlyRequestHeader(Header):
    """CONSUME_MESSAGE_DIRECTLY (309): ``msgId`` is an offsetMsgId; the broker adds
    ``brokerName`` and the stored record before forwarding it to the client."""

    consumer_group: str = field(metadata=wire("consumerGroup"))
    client_id: str | None = field(default=None, metadata=wire("clientId"))
    msg_id: str | None = field(default=None, metadata=wire("msgId"))
    broker_name: str | None = field(default=None, metadata=wire("brokerName"))


@header
class ConsumerStatusRequestHeader(Header):
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223, with ``clientAddr``: a client id) and
    GET_CONSUMER_STATUS_FROM_CLIENT (221, without)."""

    topic: str = field(metadata=wire("topic"))
    group: str = field(metadata=wire("group"))
    client_addr: str | None = field(default=None, metadata=wire("clientAddr"))
