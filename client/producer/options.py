"""DefaultMQProducer's settings: ``ProducerOptions``, what a producer holds, and
``ProducerSettings``, the same names as the keywords Producer's relatives take (mypy checks
them: ``Producer(..., send_msg_timout=3000)`` is an error, not a TypeError at run time)."""

from __future__ import annotations

from dataclasses import dataclass

from aiorocketmq.client.core.security import SecurityOptions, SecuritySettings
from aiorocketmq.remoting.protocol.codes import SerializeType


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerOptions(SecurityOptions):
    """DefaultMQProducer's settings, with its names in snake case and its defaults; and
    the security keywords every client takes (SecurityOptions: ``access_key``,
    ``secret_key``, ``security_token``, ``tls``; the secrets are left out of ``repr``)."""

    send_msg_timeout: int = 3000  # ms, one budget for every try of a send
    retry_times_when_send_failed: int = 2
    retry_another_broker_when_not_store_ok: bool = False
    compress_msg_body_over_howmuch: int = 4096
    compress_level: int = 5  # rocketmq.message.compressLevel
    max_message_size: int = 4 * 1024 * 1024
    send_latency_fault_enable: bool = False
    # ours: a topic auto-created by its first send is created on every master of TBW102's
    # route (Java leaves it on the one broker that received it)
    create_topic_on_every_master: bool = True
    default_topic_queue_nums: int = 4
    instance_name: str = "DEFAULT"
    serialize_type: SerializeType = SerializeType.JSON  # every RocketMQ 4.x broker reads it
    # message trace (the enableMsgTrace / customizedTraceTopic constructor arguments):
    # Java's trace records to ``trace_topic`` ("" = RMQ_SYS_TRACE_TOPIC), client/trace
    trace: bool = False
    trace_topic: str = ""


class ProducerSettings(SecuritySettings, total=False):
    """ProducerOptions' fields as keywords (``**settings: Unpack[ProducerSettings]``)."""

    send_msg_timeout: int
    retry_times_when_send_failed: int
    retry_another_broker_when_not_store_ok: bool
    compress_msg_body_over_howmuch: int
    compress_level: int
    max_message_size: int
    send_latency_fault_enable: bool
    create_topic_on_every_master: bool
    default_topic_queue_nums: int
    instance_name: str
    serialize_type: SerializeType
    trace: bool
    trace_topic: str
