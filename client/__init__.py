"""The Python SDK for RocketMQ 4.x clusters (ours and Apache's).

May import: remoting. ``client.api`` is the request layer every sender uses (Java's
MQClientAPIImpl); ``Producer`` sends with RocketMQ's retries and fault avoidance. The
``PushConsumer`` consumes with listeners (or ``async for``), rebalancing with its group;
``TransactionProducer`` sends half messages and commits them with the local transaction.
"""

from client.consumer_types import (
    ConsumeConcurrentlyContext,
    ConsumeFromWhere,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    MessageModel,
)
from client.errors import MQBrokerError, MQClientError
from client.iteration import Delivery
from client.lite_pull import PullConsumer
from client.message import Message, MessageQueue, SendResult, SendStatus
from client.producer import Producer, ProducerOptions, select_by_hash
from client.push import PushConsumer
from client.transaction import TransactionProducer
from client.transaction_types import (
    LocalTransactionState,
    TransactionListener,
    TransactionSendResult,
)
from remoting.errors import RemotingError
from remoting.protocol.message import MessageExt

__all__ = [
    "ConsumeConcurrentlyContext",
    "ConsumeFromWhere",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "Delivery",
    "LocalTransactionState",
    "MQBrokerError",
    "MQClientError",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "Producer",
    "ProducerOptions",
    "PullConsumer",
    "PushConsumer",
    "RemotingError",
    "SendResult",
    "SendStatus",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "select_by_hash",
]
