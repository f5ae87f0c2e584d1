"""DefaultLitePullConsumer's settings (4.9.8), in snake case with Java's defaults, and the
delays of DefaultLitePullConsumerImpl's pull tasks."""

from __future__ import annotations

from dataclasses import dataclass

from aiorocketmq.client.consumer.types import ConsumeFromWhere, MessageModel
from aiorocketmq.client.core.security import SecurityOptions, SecuritySettings
from aiorocketmq.remoting.protocol.codes import SerializeType

MIN_AUTO_COMMIT_INTERVAL_MILLIS = 1000  # DefaultLitePullConsumer.MIN_AUTOCOMMIT_INTERVAL_MILLIS

# DefaultLitePullConsumerImpl's delays, in seconds
DELAY_WHEN_CACHE_FLOW_CONTROL = 0.05
DELAY_WHEN_BROKER_FLOW_CONTROL = 0.02
DELAY_WHEN_PAUSE = 1.0
DELAY_ON_OFFSET_ERROR = 3.0  # PULL_TIME_DELAY_MILLS_ON_EXCEPTION: the next offset unknown

FLAG_LITE_PULL = 0x10  # PullSysFlag.FLAG_LITE_PULL_MESSAGE


@dataclass(frozen=True, slots=True, kw_only=True)
class LitePullOptions(SecurityOptions):
    """Times are in milliseconds, sizes in MiB, as in Java; and the security keywords
    every client takes (SecurityOptions; the secrets are left out of ``repr``)."""

    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    consume_timestamp: str = ""  # yyyyMMddHHmmss; empty: half an hour before start
    allocate_strategy: str = "AVG"  # AVG, AVG_BY_CIRCLE, CONSISTENT_HASH
    pull_batch_size: int = 10
    poll_timeout_millis: int = 5000
    auto_commit: bool = True
    auto_commit_interval_millis: int = 5000
    pull_threshold_for_all: int = 10_000  # messages buffered for poll, all queues together
    pull_threshold_for_queue: int = 1000
    pull_threshold_size_for_queue: int = 100  # MiB
    consume_max_span: int = 2000
    broker_suspend_max_time_millis: int = 20_000  # long polling
    consumer_timeout_millis_when_suspend: int = 30_000
    consumer_pull_timeout_millis: int = 10_000  # pull_raw without blocking
    topic_metadata_check_interval_millis: int = 30_000
    pull_time_delay_millis_when_exception: int = 1000  # ClientConfig
    persist_consumer_offset_interval: int = 5000  # ClientConfig: committed offsets written out
    rebalance_interval: int = 20_000  # rocketmq.client.rebalance.waitInterval
    unit_mode: bool = False
    instance_name: str = "DEFAULT"
    serialize_type: SerializeType = SerializeType.JSON
    offset_store_dir: str = ""  # broadcasting: <dir>/<client id>/<group>/offsets.json
    # message trace (the enableMsgTrace / customizedTraceTopic constructor arguments):
    # Java's trace records to ``trace_topic`` ("" = RMQ_SYS_TRACE_TOPIC), client/trace
    trace: bool = False
    trace_topic: str = ""

    def __post_init__(self) -> None:
        # compat: Java's setter ignores an interval under 1 s; we refuse it
        if self.auto_commit_interval_millis < MIN_AUTO_COMMIT_INTERVAL_MILLIS:
            raise ValueError(
                f"auto_commit_interval_millis must be at least {MIN_AUTO_COMMIT_INTERVAL_MILLIS}"
            )
        if self.pull_batch_size <= 0:
            raise ValueError("pull_batch_size must be positive")  # pullSyncImpl: maxNums <= 0
        # DefaultLitePullConsumerImpl.checkConfig
        if self.consumer_timeout_millis_when_suspend < self.broker_suspend_max_time_millis:
            raise ValueError(
                "Long polling mode, the consumer consumer_timeout_millis_when_suspend must be "
                "greater than broker_suspend_max_time_millis"
            )


class PullOptions(SecuritySettings, total=False):
    """PullConsumer's keyword arguments: LitePullOptions's fields (the defaults are there)."""

    message_model: MessageModel
    consume_from_where: ConsumeFromWhere
    consume_timestamp: str
    allocate_strategy: str
    pull_batch_size: int
    poll_timeout_millis: int
    auto_commit: bool
    auto_commit_interval_millis: int
    pull_threshold_for_all: int
    pull_threshold_for_queue: int
    pull_threshold_size_for_queue: int
    consume_max_span: int
    broker_suspend_max_time_millis: int
    consumer_timeout_millis_when_suspend: int
    consumer_pull_timeout_millis: int
    topic_metadata_check_interval_millis: int
    pull_time_delay_millis_when_exception: int
    persist_consumer_offset_interval: int
    rebalance_interval: int
    unit_mode: bool
    instance_name: str
    serialize_type: SerializeType
    offset_store_dir: str
    trace: bool
    trace_topic: str
