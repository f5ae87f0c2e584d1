"""The Python SDK for RocketMQ 4.x clusters (ours and Apache's).

May import: remoting. ``aiorocketmq.client.core.api`` is the request layer every sender uses (Java's
MQClientAPIImpl); ``Producer`` sends with RocketMQ's retries and fault avoidance. The
``PushConsumer`` consumes with listeners (or ``async for``), rebalancing with its group;
``TransactionProducer`` sends half messages and commits them with the local transaction.
"""

from aiorocketmq.client.consumer.lite.consumer import PullConsumer
from aiorocketmq.client.consumer.lite.raw import Columns, PullStatus, RawPull, decode_columns
from aiorocketmq.client.consumer.push.consumer import PushConsumer
from aiorocketmq.client.consumer.push.iteration import Delivery
from aiorocketmq.client.consumer.types import (
    ConsumeConcurrentlyContext,
    ConsumeFromWhere,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    MessageModel,
)
from aiorocketmq.client.core.errors import (
    MQBrokerError,
    MQClientError,
    MQConnectionError,
    MQTimeoutError,
)
from aiorocketmq.client.core.message import Message, MessageQueue, SendResult, SendStatus
from aiorocketmq.client.producer.options import ProducerOptions
from aiorocketmq.client.producer.producer import Producer, select_by_hash
from aiorocketmq.client.producer.transaction import TransactionProducer
from aiorocketmq.client.producer.transaction_types import (
    LocalTransactionState,
    TransactionListener,
    TransactionSendResult,
)
from aiorocketmq.remoting.protocol.message import MessageExt

__all__ = [
    "Columns",
    "ConsumeConcurrentlyContext",
    "ConsumeFromWhere",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "Delivery",
    "LocalTransactionState",
    "MQBrokerError",
    "MQClientError",
    "MQConnectionError",
    "MQTimeoutError",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "Producer",
    "ProducerOptions",
    "PullConsumer",
    "PullStatus",
    "PushConsumer",
    "RawPull",
    "SendResult",
    "SendStatus",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "decode_columns",
    "select_by_hash",
]
