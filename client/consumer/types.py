"""What consumers are configured with and hand to listeners: RocketMQ's enums, the listener
contexts and DefaultMQPushConsumer's settings (snake case, Java's defaults)."""

from __future__ import annotations

import enum
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from aiorocketmq.client.core.message import MessageQueue
from aiorocketmq.client.core.security import SecurityOptions, SecuritySettings
from aiorocketmq.remoting.protocol.codes import SerializeType
from aiorocketmq.remoting.protocol.message import MessageExt, Prop
from aiorocketmq.remoting.protocol.msgid import offset_msg_id, pack_host
from aiorocketmq.remoting.protocol.topic import RETRY_GROUP_TOPIC_PREFIX

DLQ_PREFIX = "%DLQ%"


class ConsumeStatus(enum.Enum):
    """ConsumeConcurrentlyStatus."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.Enum):
    """ConsumeOrderlyStatus (the deprecated ROLLBACK / COMMIT are not offered)."""

    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


class ConsumeFromWhere(enum.Enum):
    """Where a group with no committed offset starts (protocol.md 12.5)."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class MessageModel(enum.Enum):
    """MessageModel: CLUSTERING shares a group's queues among its consumers; BROADCASTING
    gives every consumer every message."""

    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


@dataclass(slots=True)
class ConsumeConcurrentlyContext:
    """``delay_level_when_next_consume``: 0 lets the broker pick (3 + reconsume times), -1
    sends straight to the DLQ; ``ack_index``: messages after it are retried (on success
    every message counts as consumed)."""

    message_queue: MessageQueue
    delay_level_when_next_consume: int = 0
    ack_index: int = 2**31 - 1


@dataclass(slots=True)
class ConsumeOrderlyContext:
    """``suspend_current_queue_time_millis`` overrides the consumer's setting for this once."""

    message_queue: MessageQueue
    auto_commit: bool = True
    suspend_current_queue_time_millis: int = -1


# async or plain; a plain function runs in a worker thread. None (or an exception) counts
# as RECONSUME_LATER / SUSPEND_CURRENT_QUEUE_A_MOMENT, as Java's null.
ConcurrentListener = Callable[
    [list[MessageExt], ConsumeConcurrentlyContext],
    ConsumeStatus | Awaitable[ConsumeStatus | None] | None,
]
OrderlyListener = Callable[
    [list[MessageExt], ConsumeOrderlyContext],
    ConsumeOrderlyStatus | Awaitable[ConsumeOrderlyStatus | None] | None,
]


def half_an_hour_ago() -> str:
    """DefaultMQPushConsumer.consumeTimestamp's default: yyyyMMddHHmmss, 30 minutes ago."""
    return datetime.fromtimestamp(time.time() - 1800).strftime("%Y%m%d%H%M%S")


def parse_consume_timestamp(text: str) -> int:
    """``yyyyMMddHHmmss`` (local time, as UtilAll.parseDate) to ms since the epoch."""
    try:
        return int(datetime.strptime(text, "%Y%m%d%H%M%S").timestamp() * 1000)
    except ValueError:
        raise ValueError(
            f"consume_timestamp {text!r} is not yyyyMMddHHmmss (e.g. 20261124093000)"
        ) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerOptions(SecurityOptions):
    """DefaultMQPushConsumer's settings with their Java defaults, and the security keywords
    every client takes (SecurityOptions; the secrets are left out of ``repr``)."""

    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    consume_timestamp: str = ""  # yyyyMMddHHmmss; empty: half an hour before start
    allocate_strategy: str = "AVG"  # AVG, AVG_BY_CIRCLE, CONSISTENT_HASH
    consume_concurrency: int = 20  # consumeThreadMin/Max: listener calls at once
    consume_message_batch_max_size: int = 1
    pull_batch_size: int = 32
    pull_interval: int = 0  # ms between pulls of a queue
    pull_threshold_for_queue: int = 1000
    pull_threshold_size_for_queue: int = 100  # MiB
    consume_concurrently_max_span: int = 2000
    max_reconsume_times: int = -1  # -1: 16 (concurrently), unlimited (orderly)
    suspend_current_queue_time_millis: int = 1000
    consume_timeout: int = 15  # minutes
    broker_suspend_max_time_millis: int = 15_000  # long polling
    consumer_timeout_millis_when_suspend: int = 30_000
    persist_consumer_offset_interval: int = 5000  # ms
    rebalance_interval: int = 20_000  # ms (rocketmq.client.rebalance.waitInterval)
    post_subscription_when_pull: bool = False
    unit_mode: bool = False
    # shutdown waits this long for listener calls under way (Java's default 0 waits for none)
    await_termination_millis_when_shutdown: int = 30_000
    instance_name: str = "DEFAULT"
    serialize_type: SerializeType = SerializeType.JSON
    poll_name_server_interval: int = 30_000  # ms, ClientConfig: route refresh
    heartbeat_broker_interval: int = 30_000  # ms, ClientConfig
    offset_store_dir: str = ""  # broadcasting: <dir>/<client id>/<group>/offsets.json
    # message trace (the enableMsgTrace / customizedTraceTopic constructor arguments):
    # Java's trace records to ``trace_topic`` ("" = RMQ_SYS_TRACE_TOPIC), client/trace
    trace: bool = False
    trace_topic: str = ""


class PushOptions(SecuritySettings, total=False):
    """PushConsumer's keyword arguments: ConsumerOptions's fields (the defaults are there)."""

    message_model: MessageModel
    consume_from_where: ConsumeFromWhere
    consume_timestamp: str
    allocate_strategy: str
    consume_concurrency: int
    consume_message_batch_max_size: int
    pull_batch_size: int
    pull_interval: int
    pull_threshold_for_queue: int
    pull_threshold_size_for_queue: int
    consume_concurrently_max_span: int
    max_reconsume_times: int
    suspend_current_queue_time_millis: int
    consume_timeout: int
    broker_suspend_max_time_millis: int
    consumer_timeout_millis_when_suspend: int
    persist_consumer_offset_interval: int
    rebalance_interval: int
    post_subscription_when_pull: bool
    unit_mode: bool
    await_termination_millis_when_shutdown: int
    instance_name: str
    serialize_type: SerializeType
    poll_name_server_interval: int
    heartbeat_broker_interval: int
    offset_store_dir: str
    trace: bool
    trace_topic: str


PULL_DELAY_WHEN_FLOW_CONTROL = 0.05  # s, DefaultMQPushConsumerImpl
PULL_DELAY_WHEN_EXCEPTION = 3.0
PULL_DELAY_WHEN_SUSPENDED = 1.0
LOCK_RENEW_INTERVAL = 20.0  # s, ConsumeMessageOrderlyService / REBALANCE_LOCK_INTERVAL
LOCK_MAX_LIVE = 30.0  # s, ProcessQueue.REBALANCE_LOCK_MAX_LIVE_TIME
MAX_TIME_CONSUME_CONTINUOUSLY = 60.0  # s, orderly: then give other queues a turn


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def is_retry_topic(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


def message_id(msg: MessageExt) -> str:
    """MessageClientExt.getMsgId: the producer's UNIQ_KEY, else the broker's offsetMsgId."""
    return msg.properties.get(Prop.UNIQ_KEY) or offset_msg_id(
        pack_host(msg.store_host), msg.commit_log_offset
    )
